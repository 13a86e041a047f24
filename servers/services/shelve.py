"""Shelve, shelve-offload and unshelve (seed 4: unshelve to a host, DESIGN.md section 7.2).

- ``server_shelve``: ACTIVE/STOPPED/PAUSED/SUSPENDED → (shelving) → SHELVED on the host (guest
  powered off, snapshot image ``<name>-shelved`` for image-backed servers); with
  ``SHELVED_OFFLOAD_TIME`` 0 the compute offloads at once.
- ``server_shelve_offload``: SHELVED → SHELVED_OFFLOADED (guest destroyed, allocations freed,
  host/node/compute_id cleared).
- ``server_unshelve``: SHELVED → ACTIVE on its host; SHELVED_OFFLOADED → scheduled again (an
  availability zone and/or, from 2.91, a host may be asked for) and spawned. The checks run in
  Nova's order (reference 2.3) and the RequestSpec's zone follows the matrix of reference 2.4.
  When no host fits, the server stays SHELVED_OFFLOADED with task_state None and an Error
  ``schedule_instances`` event: never stuck in ``unshelving``.
"""
from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING, Any

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from cells.transactions import api_on_commit
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, InstanceInvalidState, Invalid
from cloudcore.core.policy import authorize
from compute import rpc as compute_rpc
from conductor import rpc as conductor_rpc
from scheduling.services.aggregates import host_availability_zone, zone_available
from scheduling.services.request_specs import request_spec_get, request_spec_update

from ..choices import TaskState, VmState
from ..models import Instance
from ..status import status_from_state
from . import actions
from .guards import check_compute_host, check_not_locked, claim_task_state
from .power import cast, target
from .quotas import quota_check_unshelve

if TYPE_CHECKING:
    from cells.models import CellMapping

log = logging.getLogger(__name__)

UNSET: Any = object()
SHELVE_STATES = [VmState.ACTIVE, VmState.STOPPED, VmState.PAUSED, VmState.SUSPENDED]


class UnshelveNotOffloaded(Conflict):
    message = ('Specifying an availability zone or a host when unshelving server "%(uuid)s" with status '
               '"%(status)s" is not supported. The server status must be SHELVED_OFFLOADED.')


class UnshelveHostNotInAZ(Conflict):
    message = 'Host "%(host)s" is not in the availability zone "%(az)s".'


class AvailabilityZoneNotAvailable(Invalid):
    message = "The requested availability zone is not available"


def server_shelve(*, actor: RequestContext, instance: Instance, cell: CellMapping) -> None:
    authorize(actor, "os_compute_api:os-shelve:shelve", target(instance))
    check_not_locked(actor, instance)
    claim_task_state(instance, "shelve", new_task_state=TaskState.SHELVING, vm_states=SHELVE_STATES)
    actions.action_start(actor, instance_uuid=instance.uuid, action="shelve")
    cast(compute_rpc.shelve, actor=actor, instance=instance, cell=cell)


def server_shelve_offload(*, actor: RequestContext, instance: Instance, cell: CellMapping) -> None:
    authorize(actor, "os_compute_api:os-shelve:shelve_offload", target(instance))
    check_not_locked(actor, instance)
    claim_task_state(instance, "shelveOffload", new_task_state=TaskState.SHELVING_OFFLOADING,
                     vm_states=[VmState.SHELVED])
    actions.action_start(actor, instance_uuid=instance.uuid, action="shelveOffload")
    cast(compute_rpc.shelve_offload, actor=actor, instance=instance, cell=cell)


def server_unshelve(*, actor: RequestContext, instance: Instance, cell: CellMapping,
                    new_az: Any = UNSET, host: str | None = None) -> None:
    """``new_az`` UNSET when the body had no ``availability_zone`` key, None to unpin."""

    authorize(actor, "os_compute_api:os-shelve:unshelve", target(instance))
    check_not_locked(actor, instance)
    if instance.vm_state not in (VmState.SHELVED, VmState.SHELVED_OFFLOADED) or instance.task_state is not None:
        attr, state = ("vm_state", instance.vm_state) if instance.task_state is None else ("task_state",
                                                                                          instance.task_state)
        raise InstanceInvalidState(method="unshelve", instance_uuid=instance.uuid, attr=attr, state=state)
    if (new_az is not UNSET or host) and instance.vm_state != VmState.SHELVED_OFFLOADED:
        raise UnshelveNotOffloaded(uuid=instance.uuid, status=status_from_state(instance.vm_state, None))
    if new_az is not UNSET and new_az and not zone_available(new_az):
        raise AvailabilityZoneNotAvailable()
    spec_row = request_spec_get(instance.uuid)
    spec = spec_row or {}
    expected_az = new_az if new_az is not UNSET else spec.get("availability_zone")
    if host:
        authorize(actor, "os_compute_api:os-shelve:unshelve_to_host", target(instance))
        check_compute_host(host, cell=cell)  # an unshelve stays in the server's cell
        if expected_az is not None and host_availability_zone(host) != expected_az:
            raise UnshelveHostNotInAZ(host=host, az=expected_az)
    quota_check_unshelve(instance=instance)
    claim_task_state(instance, "unshelve", new_task_state=TaskState.UNSHELVING,
                     vm_states=[VmState.SHELVED, VmState.SHELVED_OFFLOADED])
    if instance.vm_state == VmState.SHELVED_OFFLOADED and spec_row is not None:
        # Saved before scheduling (Nova bug 1978573): the zone outlives a failed attempt.
        request_spec_update(instance.uuid, availability_zone=expected_az,
                            requested_destination={"host": host, "node": None, "cell": None} if host else None)
    actions.action_start(actor, instance_uuid=instance.uuid, action="unshelve")
    if instance.vm_state == VmState.SHELVED:
        claim_task_state(instance, "unshelve", new_task_state=TaskState.POWERING_ON,
                         expected_task_states=(TaskState.UNSHELVING,))
        cast(compute_rpc.unshelve_power_on, actor=actor, instance=instance, cell=cell)
        return
    api_on_commit(partial(conductor_rpc.unshelve_instance, ctx=actor, instance_uuid=instance.uuid,
                          cell_uuid=str(cell.uuid), host=host))


def offload_due(instance: Instance, *, offload_time: int) -> bool:
    """Should a SHELVED server be offloaded now (``SHELVED_OFFLOAD_TIME`` semantics)?"""
    if offload_time < 0 or instance.vm_state != VmState.SHELVED or instance.task_state is not None:
        return False
    if offload_time == 0:
        return True

    shelved_at = parse_datetime(str(instance.system_metadata.get("shelved_at", "")))
    return shelved_at is not None and (timezone.now() - shelved_at).total_seconds() >= offload_time


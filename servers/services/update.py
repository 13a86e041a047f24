"""``PUT /servers/{id}``: rename a server, change its description, hostname or access IPs, and (2.104)
unpin it from its availability zone or pin it to the zone it is in.

A server still waiting to be scheduled lives as a BuildRequest in the API database: the change is
written into the BuildRequest's instance blob there, so the Instance row created from it later
carries it. Otherwise the Instance row is written in the server's cell and ``instance.update``
is emitted.
"""
from __future__ import annotations

from typing import Any

from django.utils import timezone

from cells.context import target_cell
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid
from cloudcore.core.policy import authorize
from scheduling.services.request_specs import request_spec_update

from ..models import BuildRequest, Instance
from ..selectors import ServerRecord, server_get
from .guards import record_target
from .notify import notify_instance

UNSET: Any = object()


def server_update(
    *,
    actor: RequestContext,
    record: ServerRecord,
    name: str = UNSET,
    description: str | None = UNSET,
    hostname: str = UNSET,
    access_ip_v4: str | None = UNSET,
    access_ip_v6: str | None = UNSET,
    pinned_availability_zone: str | None = UNSET,
    auto_disk_config: bool = UNSET,
) -> ServerRecord:
    """Write the given fields (the ones left ``UNSET`` keep their value) and return ``record``
    holding the new values.

    Preconditions: ``record`` is visible to ``actor`` and its cell answers (the caller looked it
    up with ``server_get``). Any vm_state and task_state is accepted, as in Nova.
    Side effects: one UPDATE of the BuildRequest (API DB) or of the Instance row (its cell);
    ``instance.update`` notification when an Instance row changed.
    ``pinned_availability_zone`` (2.104) is the zone written into the server's request spec (API DB):
    None unpins the server (moves may then leave its zone); a name pins it, and must be the zone the
    server is in (Nova allows only these two transitions), else 400.
    Raises: ``PolicyNotAuthorized`` (``os_compute_api:servers:update``), ``Invalid``.
    """
    authorize(actor, "os_compute_api:servers:update", record_target(record))
    if pinned_availability_zone is not UNSET:
        _pin(record, pinned_availability_zone)
    columns = {"display_name": name, "display_description": description, "hostname": hostname,
               "access_ip_v4": access_ip_v4, "access_ip_v6": access_ip_v6, "auto_disk_config": auto_disk_config}
    changes = {column: value for column, value in columns.items() if value is not UNSET}
    if record.build_request is not None:
        br = record.build_request
        br.instance.update(changes)
        if BuildRequest.objects.filter(id=br.id).update(instance=br.instance, updated_at=timezone.now()):
            return record
        # scheduled meanwhile: the BuildRequest is gone and the Instance row in its cell holds the server
        record = server_get(actor, record.uuid)
    assert record.cell is not None
    with target_cell(record.cell):
        instance = Instance.objects.get(uuid=record.uuid)
        if changes:
            for column, value in changes.items():
                setattr(instance, column, value)
            instance.save(update_fields=[*changes, "updated_at"])
            notify_instance(actor, "instance.update", instance)
    record.instance = instance
    return record


class InvalidPin(Invalid):
    message = ("Server %(uuid)s can only be pinned to the availability zone it is in (%(current)s), "
               "not %(requested)s.")


def _pin(record: ServerRecord, zone: str | None) -> None:
    current = record.instance.availability_zone if record.instance is not None else None
    if zone is not None and zone != current:
        raise InvalidPin(uuid=record.uuid, current=current, requested=zone)
    request_spec_update(record.uuid, availability_zone=zone)

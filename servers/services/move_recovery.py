"""Giving a failed or undone move back to the server: its allocations, the migration's end state,
the fault. Shared by the conductor's workflows, the compute hosts' halves of a move and beat;
this module imports neither side.
"""
from __future__ import annotations

import logging
from collections.abc import Callable

from django.utils import timezone

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import NoValidHost
from scheduling.placement.services import allocations_delete, allocations_move
from scheduling.services.request_specs import request_spec_get

from ..choices import MigrationStatus
from ..models import Instance, Migration
from . import actions
from .notify import notify_compute_task_error

log = logging.getLogger(__name__)


def allocations_back_to_server(instance: Instance, migration_uuid: str) -> None:
    """The server gets back the allocations its migration holds (the source host's, taken over at
    the move's start); whatever the server holds now (a destination's claim) is dropped."""
    allocations_delete(consumer_uuid=instance.uuid)
    allocations_move(from_consumer_uuid=migration_uuid, to_consumer_uuid=instance.uuid,
                     project_id=instance.project_id, user_id=instance.user_id, consumer_type="INSTANCE")


def move_failed(ctx: RequestContext, instance: Instance, migration: Migration, exc: BaseException, *,
                vm_state: str | None = None, task: str = "migrate_server") -> None:
    """Allocations back on the server, migration ``error``, task_state cleared, vm_state kept (or
    set to ``vm_state``: an evacuation's ERROR); ``compute_task.<task>.error`` emitted."""
    if not isinstance(exc, NoValidHost):
        log.warning("move of %s failed: %s", instance.uuid, exc)
    allocations_back_to_server(instance, migration.uuid)
    migration.status = MigrationStatus.ERROR
    migration.save(update_fields=["status", "updated_at"])
    fields: dict[str, object] = {"task_state": None}
    if vm_state is not None:
        fields["vm_state"] = instance.vm_state = vm_state
    Instance.objects.filter(pk=instance.pk).update(**fields, updated_at=timezone.now())
    actions.fault_add(instance_uuid=instance.uuid, exc=exc, code=int(getattr(exc, "code", 500) or 500))
    actions.action_finish(ctx, instance_uuid=instance.uuid, failed=True)
    notify_compute_task_error(task, instance_uuid=instance.uuid, vm_state=instance.vm_state, exc=exc,
                              request_spec=request_spec_get(instance.uuid) or {})


def migrate_server_failed(instance: Instance, exc: BaseException) -> None:
    """The conductor's ``compute_task.migrate_server.error`` for a resize or cold migration that
    failed, same-cell or cross-cell, with the vm_state the server was left in."""
    notify_compute_task_error("migrate_server", instance_uuid=instance.uuid, vm_state=instance.vm_state, exc=exc,
                              request_spec=request_spec_get(instance.uuid) or {})


def error_out_migration(instance: Instance, migration: Migration, *,
                        back_to_server: Callable[[Instance, str], None] = allocations_back_to_server,
                        drop: Callable[..., object] = allocations_delete,
                        status: str = MigrationStatus.ERROR) -> None:
    """A same-cell move that failed or was interrupted on a host: the migration ends ``error`` and
    the allocations are those of where the server is: back from the migration to the server while
    it is still on the source host, else the migration's (source) allocations are dropped.
    ``back_to_server`` and ``drop`` (``drop(consumer_uuid=...)``) reach placement: its services by
    default, a compute host passes its HTTP client's."""
    host = Instance.all_objects.filter(pk=instance.pk).values_list("host", flat=True).first()
    if host == migration.source_compute:
        back_to_server(instance, migration.uuid)
    else:
        drop(consumer_uuid=migration.uuid)
    Migration.objects.filter(pk=migration.pk).update(status=status, updated_at=timezone.now())

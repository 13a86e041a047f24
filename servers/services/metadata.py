"""Server metadata (``/servers/{id}/metadata``): merge, replace, set or delete key/value pairs.

The metadata is a JSON column of the Instance row in the server's cell. A server still waiting to
be scheduled (a BuildRequest) cannot change it yet (409, as Nova). The number of items is capped
by the project's ``metadata_items`` quota (``servers.services.quotas``).
"""
from __future__ import annotations

from django.utils import timezone

from cells.context import target_cell
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import NotFound
from cloudcore.core.policy import authorize

from ..models import Instance
from ..selectors import ServerRecord
from .guards import record_target, writable_instance
from .quotas import MetadataLimitExceeded, quota_check_metadata

__all__ = ["MetadataLimitExceeded", "MetadataItemNotFound", "server_metadata_of", "server_metadata_update",
           "server_metadata_item_set", "server_metadata_item_delete"]

#: vm_states in which Nova lets metadata change.
METADATA_VM_STATES = ("active", "paused", "suspended", "stopped")


class MetadataItemNotFound(NotFound):
    message = "Metadata item was not found"


def server_metadata_of(record: ServerRecord) -> dict[str, str]:
    """The metadata of a server (an Instance row or a BuildRequest), as a new dict."""
    if record.instance is not None:
        return dict(record.instance.metadata or {})
    assert record.build_request is not None
    return dict(record.build_request.instance.get("metadata") or {})


def _write(actor: RequestContext, record: ServerRecord, metadata: dict[str, str]) -> dict[str, str]:
    writable_instance(actor, record, "update metadata", vm_states=METADATA_VM_STATES)
    assert record.cell is not None
    quota_check_metadata(project_id=record.project_id, count=len(metadata))
    with target_cell(record.cell):
        Instance.objects.filter(uuid=record.uuid).update(metadata=metadata, updated_at=timezone.now())
    return metadata


def server_metadata_update(*, actor: RequestContext, record: ServerRecord, metadata: dict[str, str],
                           replace: bool) -> dict[str, str]:
    """Merge ``metadata`` into the server's (``replace=False``, ``POST``) or replace it whole
    (``replace=True``, ``PUT``); returns the metadata now stored.

    Preconditions: vm_state active, paused, suspended or stopped; no task; not locked (unless
    admin). Side effects: one UPDATE of the Instance row in its cell.
    Raises: ``PolicyNotAuthorized`` (``os_compute_api:server-metadata:create`` / ``update_all``),
    ``InstanceInvalidState`` / ``InstanceIsLocked`` (409), ``MetadataLimitExceeded`` (403).
    """
    rule = "os_compute_api:server-metadata:update_all" if replace else "os_compute_api:server-metadata:create"
    authorize(actor, rule, record_target(record))
    merged = dict(metadata) if replace else {**server_metadata_of(record), **metadata}
    return _write(actor, record, merged)


def server_metadata_item_set(*, actor: RequestContext, record: ServerRecord, key: str, value: str) -> None:
    """Set one key (``PUT /metadata/{key}``). Same preconditions, effects and errors as
    ``server_metadata_update``; policy ``os_compute_api:server-metadata:update``."""
    authorize(actor, "os_compute_api:server-metadata:update", record_target(record))
    _write(actor, record, {**server_metadata_of(record), key: value})


def server_metadata_item_delete(*, actor: RequestContext, record: ServerRecord, key: str) -> None:
    """Remove one key (``DELETE /metadata/{key}``). Raises ``MetadataItemNotFound`` (404) when the
    key is absent (checked before the state guards, as Nova), else as ``server_metadata_update``;
    policy ``os_compute_api:server-metadata:delete``."""
    authorize(actor, "os_compute_api:server-metadata:delete", record_target(record))
    metadata = server_metadata_of(record)
    if key not in metadata:
        raise MetadataItemNotFound()
    metadata.pop(key)
    _write(actor, record, metadata)

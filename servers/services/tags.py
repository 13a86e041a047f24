"""Server tags (``/servers/{id}/tags``, microversion 2.26): replace, clear, add or remove tags.

Tags are ``Tag`` rows in the server's cell (a BuildRequest keeps the tags it was created with
and cannot change them yet: 409, as Nova). At most ``MAX_TAGS`` tags per server.
"""
from __future__ import annotations

from cells.context import target_cell
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Invalid, NotFound
from cloudcore.core.policy import authorize

from ..models import Tag
from ..selectors import ServerRecord
from .guards import ANY, record_target, writable_instance
from .metadata import METADATA_VM_STATES

#: vm_states in which Nova lets tags change (any task_state).
TAGS_VM_STATES = (*METADATA_VM_STATES, "shelved", "shelved_offloaded")
MAX_TAGS = 50


class TagNotFound(NotFound):
    message = "Tag %(tag)s could not be found."


class TooManyTags(Invalid):
    message = "The number of tags exceeded the per-server limit %(limit)s"


def _guard(actor: RequestContext, record: ServerRecord, rule: str) -> None:
    authorize(actor, rule, record_target(record))
    writable_instance(actor, record, "update tag", vm_states=TAGS_VM_STATES, task_states=ANY)


def server_tags_of(record: ServerRecord) -> list[str]:
    """The tags of a server (an Instance row or a BuildRequest), sorted."""
    if record.build_request is not None:
        return sorted(record.build_request.tags or [])
    assert record.cell is not None
    with target_cell(record.cell):
        return list(Tag.objects.filter(instance_uuid=record.uuid).order_by("tag").values_list("tag", flat=True))


def server_tags_replace(*, actor: RequestContext, record: ServerRecord, tags: list[str]) -> list[str]:
    """Replace every tag of the server with ``tags`` (duplicates folded); returns them sorted.

    Preconditions: vm_state active, paused, suspended, stopped, shelved or shelved_offloaded (any
    task); not locked (unless admin); the caller validated each tag and the count.
    Side effects: the server's Tag rows in its cell are deleted and recreated.
    Raises: ``PolicyNotAuthorized`` (``os_compute_api:os-server-tags:update_all``),
    ``InstanceInvalidState`` / ``InstanceIsLocked`` (409).
    """
    _guard(actor, record, "os_compute_api:os-server-tags:update_all")
    wanted = sorted(set(tags))
    assert record.cell is not None
    with target_cell(record.cell):
        Tag.objects.filter(instance_uuid=record.uuid).delete()
        Tag.objects.bulk_create([Tag(instance_uuid=record.uuid, tag=t) for t in wanted])
    return wanted


def server_tags_delete_all(*, actor: RequestContext, record: ServerRecord) -> None:
    """Remove every tag of the server. Preconditions and errors as ``server_tags_replace``;
    policy ``os_compute_api:os-server-tags:delete_all``."""
    _guard(actor, record, "os_compute_api:os-server-tags:delete_all")
    assert record.cell is not None
    with target_cell(record.cell):
        Tag.objects.filter(instance_uuid=record.uuid).delete()


def server_tag_add(*, actor: RequestContext, record: ServerRecord, tag: str) -> bool:
    """Add one tag; returns False when the server already had it (nothing written).

    Preconditions and errors as ``server_tags_replace`` (policy ``os_compute_api:os-server-tags:update``),
    plus ``TooManyTags`` (400) when the server already has ``MAX_TAGS`` tags.
    """
    _guard(actor, record, "os_compute_api:os-server-tags:update")
    assert record.cell is not None
    with target_cell(record.cell):
        if Tag.objects.filter(instance_uuid=record.uuid, tag=tag).exists():
            return False
        if Tag.objects.filter(instance_uuid=record.uuid).count() >= MAX_TAGS:
            raise TooManyTags(limit=MAX_TAGS)
        Tag.objects.create(instance_uuid=record.uuid, tag=tag)
    return True


def server_tag_delete(*, actor: RequestContext, record: ServerRecord, tag: str) -> None:
    """Remove one tag. Preconditions and errors as ``server_tags_replace`` (policy
    ``os_compute_api:os-server-tags:delete``), plus ``TagNotFound`` (404) when it is absent."""
    _guard(actor, record, "os_compute_api:os-server-tags:delete")
    assert record.cell is not None
    with target_cell(record.cell):
        if not Tag.objects.filter(instance_uuid=record.uuid, tag=tag).delete()[0]:
            raise TagNotFound(tag=tag)

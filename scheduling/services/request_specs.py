"""Writes of request specs (API database): what the scheduler is asked for a server."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db.models import JSONField, QuerySet, Subquery, TextField
from django.db.models.functions import Cast

from cloudcore.core.prepared import prepared_objects
from cloudcore.core.scope import insert_plain_now
from cloudcore.core.sqlin import values_in

from ..models import RequestSpec

#: The columns of the values of a spec that a server list shows (``RequestSpec.set_spec``).
_LISTED = ("availability_zone", "instance_group_uuid", "scheduler_hints")


def _new_row(instance_uuid: str, spec: dict[str, Any]) -> RequestSpec:
    row = RequestSpec(instance_uuid=instance_uuid)
    row.set_spec(spec)
    return row


def request_spec_create(*, instance_uuid: str, spec: dict[str, Any]) -> RequestSpec:
    """Record the request spec of a new server (``spec`` as the scheduler reads it)."""
    row = _new_row(instance_uuid, spec)
    row.save(force_insert=True)
    return row


def request_specs_create(specs: Mapping[str, dict[str, Any]]) -> None:
    """Record the request specs of new servers, ``{instance_uuid: spec}``: the rows
    ``request_spec_create`` would store, in one INSERT (in the caller's transaction, if any)."""
    insert_plain_now([_new_row(instance_uuid, spec) for instance_uuid, spec in specs.items()])


def request_specs_delete(instance_uuids: list[str]) -> tuple[int, dict[str, int]]:
    """Delete the request specs of archived servers (``QuerySet.delete``'s counts)."""
    return RequestSpec.objects.filter(instance_uuid__in=instance_uuids).delete()


def request_spec_get(instance_uuid: str) -> dict[str, Any] | None:
    """The request spec of a server (a copy), or None when it has none."""
    spec = RequestSpec.objects.filter(instance_uuid=instance_uuid).values_list("spec", flat=True).first()
    return dict(spec) if spec is not None else None


def request_specs_get(instance_uuids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``{instance_uuid: spec}`` of those among ``instance_uuids`` that have one; for one server (a
    show: a client's status poll) by a statement built once per process (``prepared_in_objects``)."""
    uuids = list(instance_uuids)
    if len(uuids) == 1:
        rows = prepared_objects("scheduling.request_spec", _request_spec, uuids)
        return {row.instance_uuid: row.spec for row in rows}
    return dict(RequestSpec.objects.filter(instance_uuid__in=values_in(uuids)).values_list("instance_uuid", "spec"))


def request_specs_listed(instance_uuids: Iterable[str]) -> list[tuple[str, str | None, str | None, str | None]]:
    """``(instance_uuid, availability_zone, instance_group_uuid, scheduler_hints)`` of those among
    ``instance_uuids`` that have a request spec, the hints as their stored JSON text (NULL when the
    spec has none), for the caller to decode: the values a server list shows, read from their own
    columns and never the spec, in one statement."""
    return list(RequestSpec.objects.filter(instance_uuid__in=values_in(list(instance_uuids))).values_list(
        "instance_uuid", "availability_zone", "instance_group_uuid", Cast("scheduler_hints", TextField())))


def _request_spec(instance_uuid: str) -> QuerySet[RequestSpec]:
    return RequestSpec.objects.filter(instance_uuid=instance_uuid)


def request_spec_of(instance_uuid: Any) -> Subquery:
    """The spec of the server ``instance_uuid`` (a value or ``OuterRef``) as a subquery, NULL
    when it has none: for a read of another app's rows that wants the spec in the same statement."""
    return Subquery(RequestSpec.objects.filter(instance_uuid=instance_uuid).values("spec")[:1],
                    output_field=JSONField())


def request_spec_update(instance_uuid: str, **changes: Any) -> bool:
    """Merge ``changes`` into a server's request spec; False when it has none."""
    row = RequestSpec.objects.filter(instance_uuid=instance_uuid).first()
    if row is None:
        return False
    row.set_spec({**row.spec, **changes})
    row.save(update_fields=["spec", *_LISTED, "updated_at"])
    return True

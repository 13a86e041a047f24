"""Scheduling trace records: written by the scheduler after each decision, read by the
explanation API and ``manage.py scheduler explain`` (all in the API database).

The scheduler runs in a request scope (``cloudcore.core.scope``): its records are written when
the scope ends, with its notifications in one transaction (in a worker, as
``select_destinations`` returns; inside an HTTP request, as the request ends). The readers here
write the current scope's pending records first, so a record is readable as soon as the
scheduling call has returned."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cloudcore.core import scope

from ..models import SchedulingTraceRecord
from ..trace import SchedulingTrace


def trace_record_save(*, trace: SchedulingTrace, instance_uuids: Iterable[str], request_id: str | None) -> None:
    """One row per instance of the request, the same trace in each (``created_at`` now), written
    in one INSERT: with the current scope's other rows when it ends, at once outside a scope."""
    body: dict[str, Any] = trace.to_dict()
    scope.insert([SchedulingTraceRecord(instance_uuid=uuid, request_id=request_id or "", result=trace.result,
                                        message=trace.message[:255], trace=body) for uuid in instance_uuids])


def trace_record_get(*, instance_uuid: str, request_id: str | None = None) -> SchedulingTraceRecord | None:
    """The latest trace of the instance (of ``request_id`` when given)."""
    scope.flush(SchedulingTraceRecord)
    qs = SchedulingTraceRecord.objects.filter(instance_uuid=instance_uuid)
    if request_id:
        qs = qs.filter(request_id=request_id)
    return qs.order_by("-created_at", "-id").first()


def trace_record_list(*, instance_uuid: str) -> list[SchedulingTraceRecord]:
    """Every trace of the instance, newest first."""
    scope.flush(SchedulingTraceRecord)
    return list(SchedulingTraceRecord.objects.filter(instance_uuid=instance_uuid).order_by("-created_at", "-id"))


def trace_records_delete(instance_uuids: list[str]) -> int:
    """Delete the traces of archived servers; the number of rows deleted."""
    scope.flush(SchedulingTraceRecord)
    return SchedulingTraceRecord.objects.filter(instance_uuid__in=instance_uuids).delete()[0]

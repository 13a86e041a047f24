"""Scheduling trace records: written by the scheduler after each decision, read by the
explanation API and ``manage.py scheduler explain`` (all in the API database)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..models import SchedulingTraceRecord
from ..trace import SchedulingTrace


def trace_record_save(*, trace: SchedulingTrace, instance_uuids: Iterable[str], request_id: str | None) -> None:
    """One row per instance of the request (one INSERT statement), the same trace in each."""
    body: dict[str, Any] = trace.to_dict()
    rows = [SchedulingTraceRecord(instance_uuid=uuid, request_id=request_id or "", result=trace.result,
                                  message=trace.message[:255], trace=body) for uuid in instance_uuids]
    if len(rows) == 1:  # one INSERT, not bulk_create's transaction around it
        rows[0].save()
    elif rows:
        SchedulingTraceRecord.objects.bulk_create(rows)


def trace_record_get(*, instance_uuid: str, request_id: str | None = None) -> SchedulingTraceRecord | None:
    """The latest trace of the instance (of ``request_id`` when given)."""
    qs = SchedulingTraceRecord.objects.filter(instance_uuid=instance_uuid)
    if request_id:
        qs = qs.filter(request_id=request_id)
    return qs.order_by("-created_at", "-id").first()


def trace_record_list(*, instance_uuid: str) -> list[SchedulingTraceRecord]:
    """Every trace of the instance, newest first."""
    return list(SchedulingTraceRecord.objects.filter(instance_uuid=instance_uuid).order_by("-created_at", "-id"))


def trace_records_delete(instance_uuids: list[str]) -> int:
    """Delete the traces of archived servers; the number of rows deleted."""
    return SchedulingTraceRecord.objects.filter(instance_uuid__in=instance_uuids).delete()[0]

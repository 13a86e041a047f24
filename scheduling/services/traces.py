"""Scheduling trace records: written by the scheduler after each decision, read by the
explanation API and ``manage.py scheduler explain`` (all in the API database).

A trace is two rows: its body (``SchedulingTraceBody``: the whole trace as compact JSON, under
the digest of that text) and a small record per instance naming it (``SchedulingTraceRecord``).
The same question with the same answer (a server retried while it is PENDING, the same flavor
that fits nowhere) has the same body: it is stored once, and each later request adds only its
record: the body's INSERT skips a digest stored already, and a process that stored (or found)
a failure's body lately does not write it again for ``body_remembered()`` (``_stored``, filled once the
transaction that held it commits): the archive keeps a body that a record named lately for
``orphan_grace()``, far longer, so a body a process remembers is there. The JSON is made once, when
the trace is saved (a failure equal to one of the last few this process saved reuses theirs);
the readers parse it back, so what they return is what the trace held. Both rows are written by
a plain INSERT statement each, made from their field values (``scope.insert_values``: no model
instance is made for them); a record alone is one statement, which commits by itself when no
other row goes with it (``scope``'s group commit: notifications off).

The scheduler runs in a request scope (``cloudcore.core.scope``): its records are written when
the scope ends, with its notifications in one transaction (in a worker, as
``select_destinations`` returns; inside an HTTP request, as the request ends); a build that finds
no valid host writes them in the conductor's transaction that points the server's mapping at
cell0 (``conductor.build.bury_in_cell0``): committed with the fault the server then shows, by
the same commit. The readers here write the current scope's pending records first, so a record is
readable as soon as the scheduling call has returned.

Deleting records (``trace_records_delete``, when servers are archived) deletes the bodies no
record names any more, in the same transaction, unless one of the records deleted was made within
``orphan_grace()``: such a body is marked (``orphaned_at``) and deleted by a later archive once the
grace has passed, if no record names it again (``trace_bodies_purge``)."""
from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import router, transaction
from django.db.models import Max
from django.utils import timezone

from cloudcore.core import scope

from ..models import SchedulingTraceBody, SchedulingTraceRecord
from ..trace import RESULT_NO_VALID_HOST, SchedulingTrace


def trace_body_digest(body: str) -> str:
    """The name of a trace body: a digest of its JSON text (32 hex digits)."""
    return hashlib.blake2b(body.encode(), digest_size=16).hexdigest()


#: how many no-valid-host traces this process remembers with their JSON (``_body``)
RECENT_KEPT = 8
#: (the trace as its JSON reads back, the JSON, its digest, the kept shortfall answer its
#: shortfall was a copy of or None), newest first
_recent: list[tuple[dict[str, Any], str, str, dict[str, Any] | None]] = []


def _body(trace: SchedulingTrace, whole: dict[str, Any] | None = None) -> tuple[str, str]:
    """(the trace's JSON, its digest). A no-valid-host trace equal to one of the last
    ``RECENT_KEPT`` saved by this process (the same failure asked again) reuses its JSON: comparing
    costs less than serialising. A trace whose shortfall is a copy of the same kept answer as a
    remembered one's (``SchedulingTrace.shortfall_of``, which nothing changes while it is kept) has
    an equal shortfall: only the rest is compared, the shortfall (most of a failure's trace) is not.
    What is kept is the JSON read back, which nothing else holds; a trace that does not read back
    as itself (a tuple in it) is only never found. ``whole``: ``trace.to_dict()``, when the caller
    has it."""
    whole = whole if whole is not None else trace.to_dict()
    failed = trace.result == RESULT_NO_VALID_HOST
    source = trace.shortfall_of
    if failed:
        for entry in list(_recent):
            kept, body, digest, kept_source = entry
            if source is not None and kept_source is source:
                if _equal_but_shortfall(kept, whole):
                    return body, digest
            elif kept == whole:
                if source is not None:  # equal to a copy of ``source``: found by it from now on
                    with contextlib.suppress(ValueError):
                        _recent.remove(entry)
                    _recent.insert(0, (kept, body, digest, source))
                return body, digest
    body = json.dumps(whole, separators=(",", ":"))
    digest = trace_body_digest(body)
    if failed:
        _recent.insert(0, (json.loads(body), body, digest, source))
        del _recent[RECENT_KEPT:]
    return body, digest


def _equal_but_shortfall(kept: dict[str, Any], whole: dict[str, Any]) -> bool:
    """Whether the traces ``kept`` and ``whole`` are equal but for their placement's shortfall,
    which is not compared."""
    if kept.keys() != whole.keys():
        return False
    for key, value in whole.items():
        if key != "placement":
            if kept[key] != value:
                return False
            continue
        held = kept[key]
        if held.keys() != value.keys() or any(held[k] != v for k, v in value.items() if k != "shortfall"):
            return False
    return True


def body_remembered() -> timedelta:
    """How long this process counts on a body it stored (or found stored) being there
    (``SCHEDULER_TRACE_BODY_REMEMBERED``): far less than ``orphan_grace()``, the margin being the
    longest a scope may hold its rows before writing them (checked when the settings load)."""
    return timedelta(seconds=settings.SCHEDULER_TRACE_BODY_REMEMBERED)


def orphan_grace() -> timedelta:
    """How long the archive keeps a body no record names when one of the records it deleted was
    made within it (``SCHEDULER_TRACE_ORPHAN_GRACE``: a process may remember the body for
    ``body_remembered()`` after making that record)."""
    return timedelta(seconds=settings.SCHEDULER_TRACE_ORPHAN_GRACE)


#: how many digests this process remembers as stored (``_stored``)
STORED_KEPT = 64
#: {digest: when a record naming it was made, in the transaction that stored or found the body},
#: oldest first: the bodies this process need not write again
_stored: dict[str, datetime] = {}


def _remembered(digest: str, now: datetime) -> bool:
    """Whether this process stored (or found) the body ``digest`` within ``body_remembered()``."""
    stored = _stored.get(digest)
    return stored is not None and now - stored < body_remembered()


def _remember_once_committed(now: datetime) -> Any:
    """What the scope calls once the body rows are written (``then``): their digests remembered
    as stored at ``now`` when the transaction that wrote them commits (never, if it rolls back)."""
    def written(rows: list[dict[str, Any]]) -> None:
        digests = [row["digest"] for row in rows]

        def remember() -> None:
            for digest in digests:
                _stored.pop(digest, None)
                _stored[digest] = now
            while len(_stored) > STORED_KEPT:
                del _stored[next(iter(_stored))]
        transaction.on_commit(remember, using=router.db_for_write(SchedulingTraceBody))
    return written


def forget_stored() -> None:
    """Forget which bodies this process stored (its databases were replaced: tests, the bench)."""
    _stored.clear()


def trace_record_save(*, trace: SchedulingTrace, instance_uuids: Iterable[str], request_id: str | None,
                      whole: dict[str, Any] | None = None) -> None:
    """One record per instance of the request, all naming one body (``created_at`` now), and the
    body unless it is stored already (or this process stored it lately): with the current
    scope's other rows when it ends, at once outside a scope. ``whole``: ``trace.to_dict()``, when
    the caller has it."""
    uuids = list(instance_uuids)
    if not uuids:
        return
    body, digest = _body(trace, whole)
    now = timezone.now()
    if not _remembered(digest, now):
        # only a failure's body is asked for again: a placed request's names its servers
        scope.insert_values(SchedulingTraceBody, [{"digest": digest, "body": body}], ignore_conflicts=True,
                            then=_remember_once_committed(now) if trace.result == RESULT_NO_VALID_HOST else None)
    scope.insert_values(SchedulingTraceRecord, [
        {"instance_uuid": uuid, "request_id": request_id or "", "created_at": now, "result": trace.result,
         "message": trace.message[:255], "body_digest": digest} for uuid in uuids])


def _with_traces(records: list[SchedulingTraceRecord]) -> list[SchedulingTraceRecord]:
    """``records`` with ``trace`` set from their bodies (one query); a body deleted under a record
    (an archive racing a new record of the same body) reads as the record's result and message."""
    digests = {r.body_digest for r in records}
    bodies = dict(SchedulingTraceBody.objects.filter(digest__in=digests).values_list("digest", "body")) \
        if digests else {}
    for record in records:
        text = bodies.get(record.body_digest)
        record.trace = json.loads(text) if text is not None else {"result": record.result,
                                                                   "message": record.message}
    return records


def trace_record_get(*, instance_uuid: str, request_id: str | None = None) -> SchedulingTraceRecord | None:
    """The latest trace of the instance (of ``request_id`` when given), ``trace`` set."""
    scope.flush(SchedulingTraceBody, SchedulingTraceRecord)
    qs = SchedulingTraceRecord.objects.filter(instance_uuid=instance_uuid)
    if request_id:
        qs = qs.filter(request_id=request_id)
    record = qs.order_by("-created_at", "-id").first()
    return _with_traces([record])[0] if record is not None else None


def trace_record_list(*, instance_uuid: str) -> list[SchedulingTraceRecord]:
    """Every trace of the instance, newest first, ``trace`` set."""
    scope.flush(SchedulingTraceBody, SchedulingTraceRecord)
    return _with_traces(list(SchedulingTraceRecord.objects.filter(instance_uuid=instance_uuid)
                             .order_by("-created_at", "-id")))


def trace_records_delete(instance_uuids: list[str]) -> int:
    """Delete the traces of archived servers, and the bodies no other record names (in one
    transaction); the number of records deleted. A body one of whose deleted records was made
    within ``orphan_grace()`` is kept, marked ``orphaned_at`` (``trace_bodies_purge`` deletes it
    later). Finding the bodies still named reads the records' ``body_digest`` without an index
    (an archive's cost, not the scheduler's)."""
    scope.flush(SchedulingTraceBody, SchedulingTraceRecord)
    now = timezone.now()
    with transaction.atomic(using=router.db_for_write(SchedulingTraceRecord)):
        records = SchedulingTraceRecord.objects.filter(instance_uuid__in=instance_uuids)
        newest = dict(records.order_by().values("body_digest").annotate(newest=Max("created_at"))
                      .values_list("body_digest", "newest"))
        deleted: int = records.delete()[0]
        if newest:
            named = SchedulingTraceRecord.objects.filter(body_digest__in=newest).values("body_digest")
            orphans = SchedulingTraceBody.objects.filter(digest__in=newest).exclude(digest__in=named)
            old = [digest for digest, made in newest.items() if made < now - orphan_grace()]
            orphans.filter(digest__in=old).delete()
            orphans.exclude(digest__in=old).update(orphaned_at=now)
    return deleted


def trace_bodies_purge() -> int:
    """Delete the bodies marked orphaned (``trace_records_delete``) more than ``orphan_grace()``
    ago that no record names again (a record made since clears the mark); the number deleted."""
    cutoff = timezone.now() - orphan_grace()
    with transaction.atomic(using=router.db_for_write(SchedulingTraceBody)):
        marked = list(SchedulingTraceBody.objects.filter(orphaned_at__lt=cutoff).values_list("digest", flat=True))
        if not marked:
            return 0
        named = set(SchedulingTraceRecord.objects.filter(body_digest__in=marked).values_list("body_digest", flat=True))
        SchedulingTraceBody.objects.filter(digest__in=named).update(orphaned_at=None)
        deleted: int = SchedulingTraceBody.objects.filter(digest__in=set(marked) - named).delete()[0]
    return deleted

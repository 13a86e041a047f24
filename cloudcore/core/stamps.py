"""Reads remembered by each process while their rows have not changed: a flavor with its extra
specs, an image, a project's quota limits, a project's default security group. Every
``POST /servers`` reads those four, and they change seldom; on PostgreSQL each read is a round trip
to a backend process, which on a busy machine waits for a CPU twice.

A kind of row has a change stamp (``ChangeStamp``: a key, a value). Each write of such a row
draws a new value for its stamp in the write's transaction (``bump``; the apps connect their
models' ``post_save`` / ``post_delete`` with ``watch`` and bump by hand where they write by
``QuerySet.update``). A ``Remembered`` read keeps its value with the stamp's value it was read
under, and gives it again while the stamp has that value. The stamps are read once per outermost
request (``cloudcore.core.scope``), all of them by one statement; the token's validation reads them
in its own statement (``identity.services.token_cache`` hands them over with ``seen``), so a
request whose reads are all remembered sends none.

Why it holds:

- the stamp is read before the rows: a value read under a stamp is at least as new as that stamp
  (a write committed between the two reads leaves a newer value under the older stamp, read again
  at the next request that sees the new stamp);
- values are drawn at random, not counted: a write rolled back after the rows were read inside its
  transaction (under its new value) leaves the old value, and the next write does not give that
  value again, as a counter would;
- a stamp with no row (none of its rows written yet, the table emptied) is given one by the first
  remembered read, before it reads: what it reads then is at least as new as that value;
- within one request the stamps read at its start stand: the request's own writes bump them and
  forget the request's reading, so its next remembered read reads the stamps again.

Within a request, a remembered value is shared with the other threads of the process: callers
copy what they change (``Remembered.get`` hands out what ``read`` returned).

A value missing under a stamp is read by one thread at a time: the threads that miss it while
another thread reads it under the same stamp wait for that read and take its value (a burst of
clients' first requests to a process just started found nothing remembered, and each of its
threads read the same four rows at once, one after another on the GIL). A waiter whose reader
found nothing, failed, or took longer than ``READ_WAIT_S`` reads for itself.
"""
from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from typing import Any, Generic, TypeVar

from django.db import IntegrityError, models, transaction
from django.db.models import QuerySet
from django.db.models.signals import post_delete, post_save

from . import scope
from .models import ChangeStamp

V = TypeVar("V")

_MEMO_KEY = "core.change_stamps"
_MAX_VALUE = 2**62
#: how long a thread waits for another thread's read of the value it misses before reading itself
READ_WAIT_S = 5.0


def bump(key: str) -> int:
    """Give the stamp ``key`` a new value (inside the caller's transaction) and return it; this
    request's stamps are read again at its next remembered read."""
    value = secrets.randbelow(_MAX_VALUE) + 1
    if not ChangeStamp.objects.filter(key=key).update(value=value):
        try:
            with transaction.atomic():
                ChangeStamp.objects.create(key=key, value=value)
        except IntegrityError:  # made by a writer at the same time: ours is a change after theirs
            ChangeStamp.objects.filter(key=key).update(value=value)
    scope.forget(_MEMO_KEY)
    return value


def stamps_query() -> QuerySet[ChangeStamp, tuple[str, int]]:
    """Every stamp as ``(key, value)`` rows, for a statement that reads them with its own rows
    (the token's validation: one ``UNION ALL``)."""
    return ChangeStamp.objects.values_list("key", "value")


def seen(rows: Iterable[tuple[str, int]]) -> None:
    """The stamps read with another statement of this request (every row of ``stamps_query``)."""
    scope.remember(_MEMO_KEY, dict(rows))


def current() -> dict[str, int]:
    """The stamps as this request read them (by one statement when it has not yet)."""
    return scope.memoized(_MEMO_KEY, lambda: dict(stamps_query()))


class Remembered(Generic[V]):
    """Values of reads of rows under the stamp ``key``, by an argument of the read (a flavor id,
    a project id); at most ``max_entries`` of them, the least recently used dropped first. A read
    that returns None (nothing found) is not remembered."""

    def __init__(self, key: str, *, max_entries: int = 1024) -> None:
        self.key = key
        self.max_entries = max_entries
        self._entries: OrderedDict[Hashable, tuple[int, V]] = OrderedDict()
        #: argument: the read of it under way in a thread of this process
        self._reading: dict[Hashable, _Reading[V]] = {}
        self._lock = threading.Lock()

    def get(self, argument: Hashable, read: Callable[[], V | None]) -> V | None:
        stamp = current().get(self.key)
        if stamp is None:  # no row written since the table was made (or emptied): from now on
            stamp = bump(self.key)
        with self._lock:
            entry = self._entries.get(argument)
            if entry is not None and entry[0] == stamp:
                self._entries.move_to_end(argument)
                return entry[1]
            reading = self._reading.get(argument)
            mine = reading is None or reading.stamp != stamp
            if mine:
                reading = self._reading[argument] = _Reading(stamp)
        assert reading is not None
        if not mine:
            reading.done.wait(READ_WAIT_S)
            if reading.value is not None:
                return reading.value
            return self._keep(argument, stamp, read())
        try:
            reading.value = self._keep(argument, stamp, read())
            return reading.value
        finally:
            with self._lock:
                if self._reading.get(argument) is reading:
                    del self._reading[argument]
            reading.done.set()

    def _keep(self, argument: Hashable, stamp: int, value: V | None) -> V | None:
        if value is not None:
            with self._lock:
                self._entries[argument] = (stamp, value)
                self._entries.move_to_end(argument)
                while len(self._entries) > self.max_entries:
                    self._entries.popitem(last=False)
        return value


class _Reading(Generic[V]):
    """A read under way: the stamp it is made under, set ``done`` when it ends, and its value
    (None until then, or when it found nothing or failed)."""

    def __init__(self, stamp: int) -> None:
        self.stamp = stamp
        self.done = threading.Event()
        self.value: V | None = None


def watch(key: str, *senders: type[models.Model] | str,
          when: Callable[[Any], bool] | None = None) -> None:
    """Bump ``key`` whenever a row of ``senders`` is saved or deleted (by the ORM, Django admin,
    a cascade), or only those rows for which ``when(row)`` holds."""
    def changed(sender: Any, instance: Any, **_kwargs: Any) -> None:
        if when is None or when(instance):
            bump(key)

    for sender in senders:
        uid = f"core.stamps.{key}.{sender if isinstance(sender, str) else sender._meta.label}"
        post_save.connect(changed, sender=sender, weak=False, dispatch_uid=f"{uid}.save")
        post_delete.connect(changed, sender=sender, weak=False, dispatch_uid=f"{uid}.delete")

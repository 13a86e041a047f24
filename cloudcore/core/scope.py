"""The request scope: what one outermost API request may remember while it runs.

``RequestScopeMiddleware`` opens a scope around each HTTP request that is not already inside one.
A request made from within another in the same thread (the compute's in-process calls to the
image and network APIs, eager tasks run inside ``POST /servers``) joins the outer request's scope,
so a read memoised there (``memoized``) is done once for the whole request, and work deferred with
``at_exit`` runs once when the outermost request ends (whatever it answers).

Outside a scope (tests calling services, Celery workers, commands) nothing is memoised and
deferred work runs at once: the scope only saves repeated reads and writes, it never changes what
is read or written.
"""
from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")


class Scope:
    def __init__(self) -> None:
        self.memo: dict[Any, Any] = {}
        self.exits: dict[Any, Callable[[], None]] = {}


_current: ContextVar[Scope | None] = ContextVar("cloudcore_request_scope", default=None)


def current() -> Scope | None:
    return _current.get()


@contextlib.contextmanager
def request_scope() -> Iterator[Scope]:
    """Open a scope, or join the one already open in this context."""
    outer = _current.get()
    if outer is not None:
        yield outer
        return
    scope = Scope()
    token = _current.set(scope)
    try:
        yield scope
    finally:
        _current.reset(token)
        for key, work in scope.exits.items():
            try:
                work()
            except Exception:  # one deferred write failing must not hide the others
                log.exception("request scope: deferred %s failed", key)


def memoized(key: Any, read: Callable[[], T]) -> T:
    """``read()`` once per scope under ``key`` (every time outside a scope)."""
    scope = _current.get()
    if scope is None:
        return read()
    if key not in scope.memo:
        scope.memo[key] = read()
    return scope.memo[key]  # type: ignore[no-any-return]


def remember(key: Any, value: Any) -> None:
    """Memoise ``value`` under ``key`` (what a write just stored; nothing outside a scope)."""
    scope = _current.get()
    if scope is not None:
        scope.memo[key] = value


def forget(key: Any) -> None:
    """Drop a memoised read of the current scope (after a write that changes it)."""
    scope = _current.get()
    if scope is not None:
        scope.memo.pop(key, None)


def at_exit(key: Any, work: Callable[[], None]) -> bool:
    """Run ``work`` once when the outermost request ends (the last registration under ``key``
    wins); False outside a scope (the caller then does the work itself)."""
    scope = _current.get()
    if scope is None:
        return False
    scope.exits[key] = work
    return True


class RequestScopeMiddleware:
    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        with request_scope():
            return self.get_response(request)

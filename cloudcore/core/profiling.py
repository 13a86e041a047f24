"""Opt-in cProfile of the web process, for finding where a request's time goes under load
(``make bench``'s live scenario): with ``CLOUDCORE_PROFILE_DIR`` set, ``cloudcore.wsgi`` wraps the
Django application in :func:`profiled`.

Each serving thread keeps one ``cProfile.Profile`` (a profiler sees only the thread that enabled
it, and gunicorn's ``gthread`` workers serve several requests at once) and a list of its requests
(method, path, status, seconds spent in the application). Both are written to
``<dir>/<pid>-<thread id>.prof`` / ``.json``, overwriting the previous dump, after a request that
finds the last dump older than ``interval`` seconds; a reader waits ``interval`` seconds after its
last request and sends one more to each thread if it needs the tail. Off (the default) nothing is
wrapped and nothing is paid."""
from __future__ import annotations

import cProfile
import json
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class _ThreadProfile:
    def __init__(self, directory: Path) -> None:
        name = f"{os.getpid()}-{threading.get_ident()}"
        self.profile = cProfile.Profile()
        self.requests: list[tuple[str, str, str, float]] = []
        self.prof_path, self.json_path = directory / f"{name}.prof", directory / f"{name}.json"
        self.dumped_at = time.monotonic()

    def dump(self) -> None:
        self.profile.dump_stats(self.prof_path)
        tmp = self.json_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.requests))
        tmp.replace(self.json_path)
        self.dumped_at = time.monotonic()


def profiled(app: WsgiApp, directory: Path | str, *, interval: float = 1.0) -> WsgiApp:
    """``app`` with every request profiled by its thread's profiler (see the module docstring).
    The application's time includes reading the response iterable: Django's responses are built
    before they are returned, so the iterable is read here, inside the profile."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    local = threading.local()

    def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        state: _ThreadProfile | None = getattr(local, "state", None)
        if state is None:
            state = local.state = _ThreadProfile(directory)
        status: list[str] = []

        def recording_start_response(code: str, headers: Any, exc_info: Any = None) -> Any:
            status.append(code.split(" ", 1)[0])
            return start_response(code, headers, exc_info) if exc_info else start_response(code, headers)

        started = time.perf_counter()
        state.profile.enable()
        try:
            result = app(environ, recording_start_response)
            body = list(result)
            close = getattr(result, "close", None)
            if close is not None:
                close()
        finally:
            state.profile.disable()
            state.requests.append((environ.get("REQUEST_METHOD", ""), environ.get("PATH_INFO", ""),
                                   status[0] if status else "", time.perf_counter() - started))
            if time.monotonic() - state.dumped_at >= interval:
                state.dump()
        return body

    return application

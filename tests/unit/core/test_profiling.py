"""The opt-in per-thread profiler of the web process (``CLOUDCORE_PROFILE_DIR``)."""
from __future__ import annotations

import json
import pstats
import threading
from pathlib import Path
from typing import Any

from cloudcore.core.profiling import profiled


def _app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    start_response("201 Created", [("Content-Type", "text/plain")])
    return [b"made ", b"it"]


def test_each_request_is_profiled_and_recorded_per_thread(tmp_path: Path) -> None:
    # given: an application wrapped with a dump after every request
    app = profiled(_app, tmp_path / "profile", interval=0)
    statuses: list[str] = []

    def call(path: str) -> bytes:
        return b"".join(app({"REQUEST_METHOD": "POST", "PATH_INFO": path}, lambda s, h: statuses.append(s)))

    # when: one request on this thread and one on another
    body = call("/compute/v2.1/servers")
    other = threading.Thread(target=call, args=("/identity/v3/auth/tokens",))
    other.start()
    other.join()

    # then: the response is untouched, and each thread has its own profile and request list
    assert body == b"made it"
    assert statuses == ["201 Created", "201 Created"]
    records = sorted(tuple(r[:3]) for p in (tmp_path / "profile").glob("*.json") for r in json.loads(p.read_text()))
    assert records == [("POST", "/compute/v2.1/servers", "201"), ("POST", "/identity/v3/auth/tokens", "201")]
    profiles = sorted((tmp_path / "profile").glob("*.prof"))
    assert len(profiles) == 2
    assert any(fn == "_app" for _f, _l, fn in pstats.Stats(*map(str, profiles)).stats)  # type: ignore[attr-defined]

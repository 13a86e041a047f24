"""Turn a cell's database URL into a Django connection configuration.

SQLite connections get WAL, a busy timeout and immediate transactions so that the web process
and several workers can write the same file; PostgreSQL URLs are used as given.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import dj_database_url

SQLITE_OPTIONS: dict[str, Any] = {
    "timeout": 30,
    "transaction_mode": "IMMEDIATE",
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
}


class InvalidDatabaseURL(ValueError):
    """The URL cannot be turned into a database configuration."""


def database_config(url: str) -> dict[str, Any]:
    """Return a ``DATABASES`` entry for ``url`` (``sqlite:///abs/path`` or ``postgres://...``)."""
    if not url or "://" not in url:
        raise InvalidDatabaseURL(f"Invalid database URL: {url!r}")
    try:
        config = dj_database_url.parse(url, conn_max_age=0)
    except Exception as exc:  # dj_database_url raises several types for bad URLs
        raise InvalidDatabaseURL(f"Invalid database URL: {url!r}: {exc}") from exc
    engine = config.get("ENGINE", "")
    if engine.endswith("sqlite3"):
        name = config.get("NAME") or ""
        if name and name != ":memory:" and not name.startswith("file:"):
            Path(name).parent.mkdir(parents=True, exist_ok=True)
        config["OPTIONS"] = dict(SQLITE_OPTIONS)
    elif "postgresql" in engine:
        config.setdefault("OPTIONS", {})
        config["CONN_HEALTH_CHECKS"] = True
    else:
        raise InvalidDatabaseURL(f"Unsupported database engine in {url!r}")
    config.setdefault("TEST", {})
    return config


def sqlite_url(path: Path | str) -> str:
    return f"sqlite:///{Path(path).resolve()}"

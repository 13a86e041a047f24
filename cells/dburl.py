"""Turn a cell's database URL into a Django connection configuration.

SQLite connections get WAL, a busy timeout and immediate transactions so that the web process
and several workers can write the same file (and the writers of one process queue in it:
``cloudcore.core.sqlite3``); PostgreSQL connections get a connect timeout and
TCP keepalives; a kept connection's health check looks at its socket before it asks the server
(``cloudcore.core.postgresql``; ``CLOUDCORE_DB_SOCKET_HEALTH_CHECK=0``: Django's ``SELECT 1``).
Connections are closed at the end of each request or task unless
``CLOUDCORE_DB_CONN_MAX_AGE`` (seconds) says to keep them: ``run_cloud`` sets it for the web
process, whose gunicorn threads would otherwise open, set up (WAL pragmas) and close a connection
to every database a request touches.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import dj_database_url

from cloudcore.core.env import env_bool, env_int, env_str

#: Django's SQLite backend, with the write transactions of a process's threads queued in the
#: process (``cloudcore.core.sqlite3.base``)
SQLITE_ENGINE = "cloudcore.core.sqlite3"
SQLITE_OPTIONS: dict[str, Any] = {
    "timeout": 30,
    "transaction_mode": "IMMEDIATE",
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
}

#: Django's PostgreSQL backend, with a kept connection's health check done without a query when
#: its socket shows nothing (``cloudcore.core.postgresql.base``)
POSTGRES_ENGINE = "cloudcore.core.postgresql"
#: libpq options of every PostgreSQL connection: a database that went away (a cell database down,
#: a network partition) fails a worker's connect or statement within seconds instead of blocking
#: its thread on a half-open socket; Django then drops the broken connection and reconnects on
#: the next use.
POSTGRES_OPTIONS: dict[str, Any] = {
    "connect_timeout": 10,
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
}


class InvalidDatabaseURL(ValueError):
    """The URL cannot be turned into a database configuration."""


def application_name() -> str:
    """What a PostgreSQL connection tells the server it is (``pg_stat_activity``): ``cloudcore-``
    and the process's name (``CLOUDCORE_PROCESS_NAME``, which ``run_cloud`` gives each process it
    starts), else the program's (``cloudcore-manage``, ``cloudcore-pytest``)."""
    name = env_str("PROCESS_NAME", "") or Path(sys.argv[0] if sys.argv and sys.argv[0] else "python").stem
    return f"cloudcore-{name}"[:63]


def conn_max_age() -> int:
    """Seconds a connection is kept between requests (``CLOUDCORE_DB_CONN_MAX_AGE``, default 0)."""
    return env_int("DB_CONN_MAX_AGE", 0, minimum=0)


def database_config(url: str) -> dict[str, Any]:
    """Return a ``DATABASES`` entry for ``url`` (``sqlite:///abs/path`` or ``postgres://...``)."""
    if not url or "://" not in url:
        raise InvalidDatabaseURL(f"Invalid database URL: {url!r}")
    max_age = conn_max_age()
    try:
        config: dict[str, Any] = dict(dj_database_url.parse(url, conn_max_age=max_age))
    except Exception as exc:  # dj_database_url raises several types for bad URLs
        raise InvalidDatabaseURL(f"Invalid database URL: {url!r}: {exc}") from exc
    engine = config.get("ENGINE", "")
    if engine.endswith("sqlite3"):
        name = config.get("NAME") or ""
        if name and name != ":memory:" and not name.startswith("file:"):
            Path(name).parent.mkdir(parents=True, exist_ok=True)
        config["ENGINE"] = SQLITE_ENGINE
        config["OPTIONS"] = dict(SQLITE_OPTIONS)
    elif "postgresql" in engine:
        options = config.setdefault("OPTIONS", {})
        for key, value in POSTGRES_OPTIONS.items():
            options.setdefault(key, value)
        options.setdefault("application_name", application_name())
        # the switch of the statements prepared per connection (cloudcore.core.serverprepared), read
        # by the backend from its settings (Django keeps a key it does not know)
        config["SERVER_PREPARE"] = env_bool("DB_SERVER_PREPARE", True)
        if config["SERVER_PREPARE"]:
            # the statements prepared per connection (cloudcore.core.serverprepared) keep one plan
            # from their first execution on, where PostgreSQL would plan each of a connection's
            # first five again; it applies to prepared statements only (a startup parameter: no
            # round trip of its own)
            startup = options.get("options", "")
            options["options"] = f"{startup} -c plan_cache_mode=force_generic_plan".strip()
        if env_bool("DB_SOCKET_HEALTH_CHECK", True):
            config["ENGINE"] = POSTGRES_ENGINE
        config["CONN_HEALTH_CHECKS"] = True
    else:
        raise InvalidDatabaseURL(f"Unsupported database engine in {url!r}")
    config.setdefault("TEST", {})
    return config


def sqlite_url(path: Path | str) -> str:
    return f"sqlite:///{Path(path).resolve()}"


def no_database() -> dict[str, Any]:
    """The ``default`` of a process that must not have the API database (an isolated compute): an
    empty in-memory SQLite database, where any query fails ("no such table")."""
    return {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:", "TEST": {}}


def url_map(raw: str) -> dict[str, str]:
    """``"name=url,name=url"`` (CLOUDCORE_CELL_DATABASES and the like) as {name: url}."""
    found = {}
    for item in filter(None, raw.split(",")):
        name, _, url = item.partition("=")
        found[name.strip()] = url.strip()
    return found

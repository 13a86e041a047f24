"""The live cloud fixture (``live_cloud``, one per test session, real processes), registered in
``tests/conftest.py`` so that every tier that needs it (e2e, hardening) shares the one cloud.

With ``CLOUDCORE_E2E_DATABASE_URL`` set (``make test-e2e-postgres``) the cloud runs on fresh
PostgreSQL databases (API + one per demo cell) created here and dropped afterwards; with
``CLOUDCORE_E2E_BROKER_URL`` its Celery broker is that Redis.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from .cloud import LiveCloud, cell_roles, free_port, fresh_postgres_databases, make_env


@contextmanager
def running_cloud(tmp_path_factory: pytest.TempPathFactory, name: str, *, broker_db: int = 0,
                  isolated_computes: bool = False, **extra: str) -> Iterator[LiveCloud]:
    """A started ``run_cloud`` in a fresh var dir: on fresh PostgreSQL databases (dropped
    afterwards) when ``CLOUDCORE_E2E_DATABASE_URL`` is set, SQLite otherwise; ``extra`` goes into
    its environment (e.g. ``CLOUDCORE_USE_PENDING_STATE="true"``). A second cloud up at the same
    time needs its own ``broker_db`` (Redis database number): clouds sharing one would take each
    other's tasks from the same queues.

    ``isolated_computes``: the compute workers run isolated (``CLOUDCORE_COMPUTE_ISOLATION``), each
    with its cell's database URL only; on PostgreSQL as a role per cell that may connect to that
    cell's database only (``cell_roles``)."""
    with cloud_in(Path(tmp_path_factory.mktemp(name)), broker_db=broker_db, isolated_computes=isolated_computes,
                  **extra) as cloud:
        yield cloud


@contextmanager
def cloud_in(var_dir: Path, *, broker_db: int = 0, isolated_computes: bool = False, external: bool = True,
             **extra: str) -> Iterator[LiveCloud]:
    """``running_cloud`` in the existing directory ``var_dir`` (outside pytest: ``make bench``).
    ``external=False``: SQLite and the embedded broker even when ``CLOUDCORE_E2E_*`` name others."""
    port = free_port()
    broker = os.environ.get("CLOUDCORE_E2E_BROKER_URL") if external else None
    if broker and broker_db:
        import urllib.parse

        extra["CLOUDCORE_BROKER_URL"] = urllib.parse.urlunsplit(
            urllib.parse.urlsplit(broker)._replace(path=f"/{broker_db}"))
    with ExitStack() as stack:
        if external and os.environ.get("CLOUDCORE_E2E_DATABASE_URL"):
            extra["CLOUDCORE_DATABASE_URL"] = stack.enter_context(
                fresh_postgres_databases(os.environ["CLOUDCORE_E2E_DATABASE_URL"]))
            if isolated_computes:
                roles = stack.enter_context(cell_roles(extra["CLOUDCORE_DATABASE_URL"]))
                extra["CLOUDCORE_DEMO_COMPUTE_DATABASES"] = ",".join(f"{cell}={url}" for cell, url in roles.items())
        if isolated_computes:
            extra["CLOUDCORE_COMPUTE_ISOLATION"] = "true"
        cloud = LiveCloud(var_dir=var_dir, port=port, env=make_env(var_dir, port, external=external, **extra))
        try:
            cloud.start()
            yield cloud
        finally:
            cloud.stop()


@pytest.fixture(scope="session")
def live_cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveCloud]:
    with running_cloud(tmp_path_factory, "live-cloud") as cloud:
        yield cloud

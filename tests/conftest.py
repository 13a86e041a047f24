"""Shared fixtures: the three cells of the test settings mapped in the API database."""
from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cells.models import CELL0_UUID, CellMapping

ALL_DATABASES = ["default", "cell0", "cell1", "cell2"]


@pytest.fixture
def cells(db: None) -> dict[str, CellMapping]:
    """cell0, cell1 and cell2 as CellMapping rows whose names match the test connections."""
    from django.conf import settings

    mappings = {}
    for name in ("cell0", "cell1", "cell2"):
        config = settings.DATABASES[name]
        mappings[name] = CellMapping.objects.create(
            uuid=CELL0_UUID if name == "cell0" else _uuid_for(name),
            name=name,
            database_connection=f"sqlite:///{config['NAME']}"
            if config["ENGINE"].endswith("sqlite3")
            else f"postgres://{config['USER']}:{config['PASSWORD']}@{config['HOST']}:{config['PORT']}/{config['NAME']}",
            transport_url="none:///" if name == "cell0" else f"memory:///{name}",
        )
    return mappings


def _uuid_for(name: str) -> str:
    import uuid

    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"cloudcore-test-{name}"))


from tests.e2e.livecloud import live_cloud  # noqa: E402,F401 - one live cloud per session, for every tier


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Debian's chromium through Playwright, one per session for every tier (Playwright's sync API
    allows one running instance per thread: the browser tier and the make-run e2e tests share it)."""
    from tests.browser.conftest import ARGS, CHROMIUM

    if not shutil.which(CHROMIUM) and not Path(CHROMIUM).exists():
        pytest.skip(f"no chromium at {CHROMIUM} (the Makefile installs Debian's chromium)")
    playwright_api = pytest.importorskip("playwright.sync_api")
    with playwright_api.sync_playwright() as p:
        instance = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield instance
        instance.close()


@pytest.fixture(autouse=True)
def _trace_bodies_forgotten() -> Iterator[None]:
    """Each test starts as a fresh process would: no trace body remembered as stored (a test that
    commits leaves its bodies remembered, then its tables are emptied)."""
    from scheduling.services.traces import forget_stored

    forget_stored()
    yield

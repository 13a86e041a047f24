"""Browser tests: Playwright driving Debian's chromium (never a downloaded browser) against a
live server of the test databases. Screenshots land in ``test-output/screenshots/``."""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cloud import Cloud, build_cloud

CHROMIUM = os.environ.get("CLOUDCORE_CHROMIUM", "/usr/bin/chromium")
SHOTS = Path(__file__).resolve().parents[2] / "test-output" / "screenshots"
# Playwright's sync API keeps an event loop in this thread; the test's own ORM calls are still sync.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


@pytest.fixture
def live_cloud(cells: dict) -> Iterator[Cloud]:
    """The in-process test cloud (four libvirt test-driver hosts in two cells, eager tasks)."""
    cloud = build_cloud(cells)
    yield cloud
    cloud.teardown()


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    width = getattr(request, "param", 1280)
    context = browser.new_context(viewport={"width": width, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(15000)
    yield pg
    context.close()


def shot(page: Any, name: str) -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def login(page: Any, base: str, name: str, password: str) -> None:
    page.goto(f"{base}/login/")
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")

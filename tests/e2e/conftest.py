"""Fixtures for the end-to-end tier: one live cloud per test session (real processes)."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from .cloud import LiveCloud, free_port, make_env


@pytest.fixture(scope="session")
def live_cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveCloud]:
    var_dir = Path(tmp_path_factory.mktemp("live-cloud"))
    port = free_port()
    cloud = LiveCloud(var_dir=var_dir, port=port, env=make_env(var_dir, port))
    cloud.start()
    try:
        yield cloud
    finally:
        cloud.stop()

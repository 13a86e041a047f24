from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compute.virt.libvirt import LibvirtDriver, write_test_node
from tests.cloud import (
    Cloud,
    build_cloud,
    cloud,  # noqa: F401
)


@pytest.fixture
def libvirt_cloud(cells: dict[str, Any], tmp_path: Path) -> Iterator[Cloud]:
    """The test cloud with cloudcore's own libvirt driver on the test driver, each host with its
    own node and state path (``tmp_path/<host>``)."""
    def factory(host: str) -> LibvirtDriver:
        node = write_test_node(tmp_path / host, hostname=host, vcpus=4, memory_mb=8192, disk_gb=40)
        return LibvirtDriver(host=host, uri=f"test://{node}", state_path=tmp_path / host)

    c = build_cloud(cells, driver_factory=factory)
    yield c
    c.teardown()

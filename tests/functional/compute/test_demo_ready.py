"""``make run`` says the cloud is running only once its demo compute hosts are mapped to their
cells (``compute.demo.not_ready``, asked by run_cloud through ``cloudcore.core.demo.waiting_for``):
a server booted at once could otherwise be scheduled to a host the conductor cannot place it on."""
from __future__ import annotations

import pytest

from cells.models import CellMapping
from cloudcore.core.demo import waiting_for
from compute import demo
from hosts.services.discovery import map_host

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def test_the_demo_waits_until_every_compute_host_is_mapped(cells: dict[str, CellMapping]) -> None:
    # given no demo host mapped yet
    assert demo.not_ready() == "compute hosts not mapped to their cells yet: compute1, compute2, compute3, compute4"
    assert demo.not_ready() in waiting_for()
    # when all but one are mapped
    for host, cell, *_ in demo.HOSTS[:3]:
        map_host(host=host, cell=cells[cell])
    # then the one left is named
    assert demo.not_ready() == "compute hosts not mapped to their cells yet: compute4"
    # and once it is mapped, nothing is waited for
    map_host(host="compute4", cell=cells["cell2"])
    assert demo.not_ready() is None and not waiting_for()

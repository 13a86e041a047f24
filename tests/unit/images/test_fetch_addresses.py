"""Which addresses an image import may connect to (``images.fetch._reachable``): global ones, and
others only inside ``IMAGE_IMPORT_ALLOWED_NETWORKS``."""
from __future__ import annotations

from typing import Any

import pytest

from images import fetch


@pytest.mark.parametrize(("address", "reachable"), [
    ("93.184.216.34", True), ("2606:2800:220:1:248:1893:25c8:1946", True),
    ("127.0.0.1", False), ("::1", False), ("::ffff:127.0.0.1", False), ("0.0.0.0", False),
    ("10.1.2.3", False), ("172.16.0.9", False), ("192.168.1.1", False), ("100.64.0.1", False),
    ("169.254.169.254", False), ("fe80::1%eth0", False), ("fd00::1", False), ("224.0.0.1", False),
])
def test_only_global_addresses_by_default(settings: Any, address: str, reachable: bool) -> None:
    settings.IMAGE_IMPORT_ALLOWED_NETWORKS = []
    assert fetch._reachable(address) is reachable


def test_an_allowed_network_is_reachable_and_no_other(settings: Any) -> None:
    settings.IMAGE_IMPORT_ALLOWED_NETWORKS = ["10.20.0.0/16", "fd00:1::/64"]
    assert fetch._reachable("10.20.3.4") and fetch._reachable("fd00:1::5")
    assert not fetch._reachable("10.21.0.1") and not fetch._reachable("169.254.169.254")

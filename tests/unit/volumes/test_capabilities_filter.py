"""The capabilities filter the volume worker schedules with (Cinder's operators on extra specs)."""
from __future__ import annotations

import pytest

from volumes.servicegroup import backend_accepts, spec_matches

CAPS = {"volume_backend_name": "pool", "storage_protocol": "file", "vendor_name": "cloudcore",
        "multiattach": True, "total_capacity_gb": 100.0, "driver_version": "1.0.0"}


@pytest.mark.parametrize(("value", "requirement", "expected"), [
    ("pool", "pool", True), ("pool", "lvm", False),
    (True, "<is> True", True), (True, "<is> False", False), (False, "<is> false", True),
    ("cloudcore", "<in> cloud", True), ("cloudcore", "<in> lvm", False),
    ("file", "<or> iSCSI <or> file", True), ("file", "<or> iSCSI <or> nfs", False),
    (100.0, ">= 50", True), (100.0, "<= 50", False), (100.0, "== 100", True), (100.0, "!= 100", False),
    (100.0, "= 10", True),  # Cinder's "=" means at least
    ("1.0.0", "s== 1.0.0", True), ("1.0.0", "s< 0.9", False), ("abc", ">= 1", False),
    (None, "<is> True", False),
])
def test_spec_matches(value: object, requirement: str, expected: bool) -> None:
    assert spec_matches(value, requirement) is expected


def test_backend_accepts_by_scope() -> None:
    # reported capabilities must be satisfied, scoped or not
    assert backend_accepts({"volume_backend_name": "pool", "capabilities:multiattach": "<is> True"}, CAPS)
    assert not backend_accepts({"storage_protocol": "iSCSI"}, CAPS)
    assert not backend_accepts({"capabilities:storage_protocol": "iSCSI"}, CAPS)
    # a capabilities: key the back end does not report finds no back end
    assert not backend_accepts({"capabilities:dedup": "<is> True"}, CAPS)
    # other scopes and an operator's own unscoped labels are not capability requirements
    assert backend_accepts({"RESKEY:availability_zones": "az9", "tier": "gold", "qos:x": "1"}, CAPS)
    assert backend_accepts({}, CAPS)

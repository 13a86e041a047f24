"""``os-instance_usage_audit_log``: the last completed month, every compute host not run."""
from __future__ import annotations

import pytest

from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def test_audit_log_list_and_before_a_time(cloud: Cloud) -> None:
    admin = cloud.admin()
    logs = cloud.get(admin, "os-instance_usage_audit_log").json()["instance_usage_audit_logs"]
    assert logs["num_hosts"] == 4 and logs["hosts_not_run"] == ["compute1", "compute2", "compute3", "compute4"]
    assert logs["overall_status"] == "0 of 4 hosts done. 0 errors."
    shown = cloud.get(admin, "os-instance_usage_audit_log/2026-03-15%2010:00:00").json()["instance_usage_audit_log"]
    assert (shown["period_beginning"], shown["period_ending"]) == ("2026-02-01 00:00:00", "2026-03-01 00:00:00")
    january = cloud.get(admin, "os-instance_usage_audit_log/2026-01-02%2000:00:00").json()["instance_usage_audit_log"]
    assert january["period_beginning"] == "2025-12-01 00:00:00"
    bad = cloud.get(admin, "os-instance_usage_audit_log/not-a-time")
    assert bad.status_code == 400 and "not-a-time" in bad.json()["badRequest"]["message"]
    assert cloud.get(cloud.member(), "os-instance_usage_audit_log").status_code == 403

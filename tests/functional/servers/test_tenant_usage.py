"""``/os-simple-tenant-usage``: hours charged per server over a period, weighed by the flavor,
deleted servers included, policy per route, and 2.40 paging."""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from cells.context import target_cell
from cells.models import InstanceMapping
from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])

PERIOD = "start=2026-01-01T00:00:00&end=2026-01-02T00:00:00"


def _launched(cloud: Cloud, uuid: str, launched: datetime, terminated: datetime | None = None) -> None:
    """Pin a server's launch (and end) times so that the hours are known."""
    inst = cloud.instance(uuid)
    with target_cell(InstanceMapping.objects.get(instance_uuid=uuid).cell):
        inst.launched_at, inst.terminated_at = launched, terminated
        inst.save(update_fields=["launched_at", "terminated_at"])


def _booted(cloud: Cloud, client: Any, name: str) -> dict[str, Any]:
    server = cloud.create_server(client, name)
    return cloud.wait_for_status(client, server["id"], "ACTIVE")


def test_a_projects_usage_weighs_hours_by_the_flavor(cloud: Cloud) -> None:
    client = cloud.member()
    running = _booted(cloud, client, "running")
    gone = _booted(cloud, client, "gone")
    _launched(cloud, running["id"], datetime(2025, 12, 31, 12, tzinfo=UTC))    # the whole day: 24 h
    assert cloud.delete(client, f"servers/{gone['id']}").status_code == 204
    _launched(cloud, gone["id"], datetime(2026, 1, 1, 6, tzinfo=UTC), datetime(2026, 1, 1, 12, tzinfo=UTC))  # 6 h
    project_id = running["tenant_id"]

    usage = cloud.get(client, f"os-simple-tenant-usage/{project_id}?{PERIOD}").json()["tenant_usage"]
    inst = cloud.instance(running["id"])
    assert usage["total_hours"] == pytest.approx(30.0)
    assert usage["total_vcpus_usage"] == pytest.approx(30.0 * inst.vcpus)
    assert usage["total_memory_mb_usage"] == pytest.approx(30.0 * inst.memory_mb)
    assert (usage["start"], usage["stop"]) == ("2026-01-01T00:00:00.000000", "2026-01-02T00:00:00.000000")
    by_id = {s["instance_id"]: s for s in usage["server_usages"]}
    assert by_id[gone["id"]]["state"] == "terminated"
    assert by_id[gone["id"]]["ended_at"] == "2026-01-01T12:00:00.000000"
    assert by_id[gone["id"]]["uptime"] == 6 * 3600
    assert by_id[running["id"]]["state"] == "active" and by_id[running["id"]]["ended_at"] is None
    assert by_id[running["id"]]["flavor"] == "m1.tiny"

    # a period that ends before either launched charges nothing and lists nothing
    empty = cloud.get(client, f"os-simple-tenant-usage/{project_id}?start=2025-01-01T00:00:00"
                              "&end=2025-01-02T00:00:00").json()
    assert empty == {"tenant_usage": {}}


def test_list_is_for_admins_and_detailed_adds_servers(cloud: Cloud) -> None:
    client = cloud.member()
    server = _booted(cloud, client, "vm1")
    _launched(cloud, server["id"], datetime(2025, 12, 31, tzinfo=UTC))
    assert cloud.get(client, f"os-simple-tenant-usage?{PERIOD}").status_code == 403
    listed = cloud.get(cloud.admin(), f"os-simple-tenant-usage?{PERIOD}").json()["tenant_usages"]
    assert [u["tenant_id"] for u in listed] == [server["tenant_id"]]
    assert "server_usages" not in listed[0] and listed[0]["total_hours"] == pytest.approx(24.0)
    detailed = cloud.get(cloud.admin(), f"os-simple-tenant-usage?{PERIOD}&detailed=1").json()["tenant_usages"]
    assert [s["instance_id"] for s in detailed[0]["server_usages"]] == [server["id"]]
    other = cloud.member("demo2", "demo2")
    assert cloud.get(other, f"os-simple-tenant-usage/{server['tenant_id']}?{PERIOD}").status_code == 403


@pytest.mark.parametrize("query", ["start=yesterday", "start=2026-01-02T00:00:00&end=2026-01-01T00:00:00"])
def test_bad_periods_are_400(cloud: Cloud, query: str) -> None:
    response = cloud.get(cloud.admin(), f"os-simple-tenant-usage?{query}")
    assert response.status_code == 400, response.content


def test_paging_from_2_40(cloud: Cloud) -> None:
    client = cloud.member()
    servers = [_booted(cloud, client, f"vm{n}") for n in range(3)]
    for server in servers:
        _launched(cloud, server["id"], datetime(2025, 12, 31, tzinfo=UTC))
    project_id = servers[0]["tenant_id"]
    first = cloud.get(client, f"os-simple-tenant-usage/{project_id}?{PERIOD}&limit=2", version="2.40").json()
    page = [s["instance_id"] for s in first["tenant_usage"]["server_usages"]]
    assert len(page) == 2
    href = first["tenant_usage_links"][0]["href"]
    assert f"marker={page[-1]}" in href
    rest = cloud.get(client, f"os-simple-tenant-usage/{project_id}?{PERIOD}&limit=2&marker={page[-1]}",
                     version="2.40").json()
    assert {s["instance_id"] for s in rest["tenant_usage"]["server_usages"]} | set(page) == {s["id"] for s in servers}
    assert "tenant_usage_links" not in rest
    # below 2.40 there is no paging: limit is not read
    whole = cloud.get(client, f"os-simple-tenant-usage/{project_id}?{PERIOD}&limit=1", version="2.39").json()
    assert len(whole["tenant_usage"]["server_usages"]) == 3
    bad = cloud.get(client, f"os-simple-tenant-usage/{project_id}?{PERIOD}&marker=nope", version="2.40")
    assert bad.status_code == 400

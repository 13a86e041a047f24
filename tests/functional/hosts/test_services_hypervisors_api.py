"""os-services and os-hypervisors through HTTP, across both cells, per microversion."""
from __future__ import annotations

import pytest

from scheduling.placement.services import traits_get
from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def test_service_list_shows_four_up_computes_with_zones(cloud: Cloud) -> None:
    admin = cloud.admin()
    services = cloud.get(admin, "os-services", version="2.53").json()["services"]
    assert sorted((s["host"], s["zone"], s["state"], s["status"]) for s in services) == [
        ("compute1", "az1", "up", "enabled"), ("compute2", "az1", "up", "enabled"),
        ("compute3", "az2", "up", "enabled"), ("compute4", "az2", "up", "enabled")]
    assert all(len(str(s["id"])) == 36 for s in services)
    old = cloud.get(admin, "os-services", version="2.52").json()["services"]
    assert all(isinstance(s["id"], int) for s in old)
    assert cloud.get(admin, "os-services?host=compute3").json()["services"][0]["host"] == "compute3"
    assert cloud.get(cloud.member(), "os-services").status_code == 403


def test_disable_with_reason_marks_the_provider_and_scheduling_avoids_it(cloud: Cloud) -> None:
    admin = cloud.admin()
    services = {s["host"]: s for s in cloud.get(admin, "os-services", version="2.53").json()["services"]}
    sid = services["compute1"]["id"]
    response = cloud.put(admin, f"os-services/{sid}", {"status": "disabled", "disabled_reason": "maintenance"},
                         version="2.53")
    assert response.status_code == 200
    assert response.json()["service"]["status"] == "disabled"
    assert response.json()["service"]["disabled_reason"] == "maintenance"
    assert "COMPUTE_STATUS_DISABLED" in traits_get(rp=cloud.hosts["compute1"]["node_uuid"])
    for n in range(3):
        server = cloud.create_server(admin, f"vm{n}", availability_zone="az1")
        assert cloud.show(admin, server["id"])["OS-EXT-SRV-ATTR:host"] == "compute2"
    enabled = cloud.put(admin, f"os-services/{sid}", {"status": "enabled"}, version="2.53")
    assert enabled.json()["service"]["disabled_reason"] is None
    assert "COMPUTE_STATUS_DISABLED" not in traits_get(rp=cloud.hosts["compute1"]["node_uuid"])


def test_reason_without_disable_is_400_and_force_down(cloud: Cloud) -> None:
    admin = cloud.admin()
    sid = cloud.get(admin, "os-services?host=compute3", version="2.53").json()["services"][0]["id"]
    assert cloud.put(admin, f"os-services/{sid}", {"status": "enabled", "disabled_reason": "x"},
                     version="2.53").status_code == 400
    assert cloud.put(admin, f"os-services/{sid}", {}, version="2.53").status_code == 400
    down = cloud.put(admin, f"os-services/{sid}", {"forced_down": True}, version="2.53")
    assert down.json()["service"]["forced_down"] is True and down.json()["service"]["state"] == "down"
    assert cloud.put(admin, "os-services/nope", {"status": "enabled"}, version="2.53").status_code == 404


def test_legacy_disable_log_reason_below_253(cloud: Cloud) -> None:
    admin = cloud.admin()
    response = cloud.put(admin, "os-services/disable-log-reason",
                         {"host": "compute2", "binary": "nova-compute", "disabled_reason": "old api"}, version="2.52")
    assert response.status_code == 200
    assert response.json()["service"] == {"host": "compute2", "binary": "nova-compute", "status": "disabled",
                                          "disabled_reason": "old api"}
    listed = cloud.get(admin, "os-services?host=compute2").json()["services"][0]
    assert listed["status"] == "disabled"
    assert cloud.put(admin, "os-services/enable", {"host": "compute2", "binary": "nova-compute"},
                     version="2.52").json()["service"]["status"] == "enabled"


def test_delete_refused_while_hosting_servers(cloud: Cloud) -> None:
    admin = cloud.admin()
    server = cloud.create_server(admin, "vm1", availability_zone="az2")
    host = cloud.show(admin, server["id"])["OS-EXT-SRV-ATTR:host"]
    sid = cloud.get(admin, f"os-services?host={host}", version="2.53").json()["services"][0]["id"]
    assert cloud.delete(admin, f"os-services/{sid}", version="2.53").status_code == 409
    other = "compute4" if host == "compute3" else "compute3"
    oid = cloud.get(admin, f"os-services?host={other}", version="2.53").json()["services"][0]["id"]
    assert cloud.delete(admin, f"os-services/{oid}", version="2.53").status_code == 204
    assert cloud.get(admin, f"os-services?host={other}").json()["services"] == []


def test_status_changes_and_a_delete_are_notified_as_the_service(cloud: Cloud) -> None:
    admin = cloud.admin()
    sid = cloud.get(admin, "os-services?host=compute4", version="2.53").json()["services"][0]["id"]
    cloud.put(admin, f"os-services/{sid}", {"status": "disabled", "disabled_reason": "rack move"}, version="2.53")
    cloud.put(admin, f"os-services/{sid}", {"forced_down": True}, version="2.53")
    # a refused update sends nothing
    assert cloud.put(admin, f"os-services/{sid}", {"status": "enabled", "disabled_reason": "x"},
                     version="2.53").status_code == 400
    assert cloud.delete(admin, f"os-services/{sid}", version="2.53").status_code == 204
    sent = [(n["event_type"], n["publisher_id"], n["payload"]["nova_object.data"])
            for n in cloud.notifications() if n["event_type"].startswith("service.")]
    assert [(event, publisher) for event, publisher, _ in sent] == [
        ("service.update", "nova-compute:compute4"), ("service.update", "nova-compute:compute4"),
        ("service.delete", "nova-compute:compute4")]
    disabled, forced, deleted = (data for _, _, data in sent)
    assert (disabled["disabled"], disabled["disabled_reason"], disabled["forced_down"]) == (True, "rack move", False)
    assert (disabled["uuid"], disabled["binary"], disabled["availability_zone"]) == (sid, "nova-compute", "az2")
    assert forced["forced_down"] is True and deleted["uuid"] == sid


def test_hypervisors_list_detail_show_per_microversion(cloud: Cloud) -> None:
    admin = cloud.admin()
    server = cloud.create_server(admin, "vm1", availability_zone="az1")
    host = cloud.show(admin, server["id"])["OS-EXT-SRV-ATTR:host"]
    listed = cloud.get(admin, "os-hypervisors", version="2.53").json()["hypervisors"]
    assert sorted(h["hypervisor_hostname"] for h in listed) == ["compute1", "compute2", "compute3", "compute4"]
    assert {h["state"] for h in listed} == {"up"}
    detail = cloud.get(admin, "os-hypervisors/detail", version="2.87").json()["hypervisors"]
    assert "vcpus" in detail[0] and "service" in detail[0]
    assert isinstance(detail[0]["cpu_info"], dict)  # an object from 2.28, a JSON string before
    old = cloud.get(admin, "os-hypervisors/detail", version="2.27").json()["hypervisors"]
    assert isinstance(old[0]["cpu_info"], str)
    modern = cloud.get(admin, "os-hypervisors/detail", version="2.88").json()["hypervisors"]
    assert "vcpus" not in modern[0]
    node_uuid = cloud.hosts[host]["node_uuid"]
    shown = cloud.get(admin, f"os-hypervisors/{node_uuid}?with_servers=true", version="2.53").json()["hypervisor"]
    assert shown["servers"] == [{"name": "vm1", "uuid": server["id"]}]
    assert cloud.get(admin, "os-hypervisors/no-such-id", version="2.53").status_code == 404
    assert cloud.get(cloud.member(), "os-hypervisors").status_code == 403
    search = cloud.get(admin, "os-hypervisors/compute/search", version="2.52").json()["hypervisors"]
    assert len(search) == 4


def _refresh_nodes(cloud: Cloud) -> None:
    """What each compute worker's periodic refresh does: the node rows from the hypervisor."""
    from cells.context import target_cell
    from cells.models import CellMapping
    from compute.resource_tracker import update_usage
    from hosts.models import ComputeNode

    for host, info in cloud.hosts.items():
        with target_cell(CellMapping.objects.get(name=info["cell"])):
            update_usage(node=ComputeNode.objects.get(uuid=info["node_uuid"]), driver=cloud.drivers[host])


def test_statistics_sum_the_enabled_nodes_up_to_287_and_404_from_288(cloud: Cloud) -> None:
    # given four refreshed nodes, one server on one of them, and compute4 disabled
    admin = cloud.admin()
    cloud.create_server(admin, "vm1", availability_zone="az1")
    _refresh_nodes(cloud)
    detail = {h["hypervisor_hostname"]: h for h in
              cloud.get(admin, "os-hypervisors/detail", version="2.87").json()["hypervisors"]}
    sid = cloud.get(admin, "os-services?host=compute4", version="2.53").json()["services"][0]["id"]
    cloud.put(admin, f"os-services/{sid}", {"status": "disabled"}, version="2.53")
    # when the statistics are asked for at 2.87 (and the old 2.1 default)
    stats = cloud.get(admin, "os-hypervisors/statistics", version="2.87")
    # then they are the sums over the three enabled nodes, in Nova's body
    assert stats.status_code == 200, stats.content
    body = stats.json()["hypervisor_statistics"]
    enabled = [detail[h] for h in ("compute1", "compute2", "compute3")]
    assert body["count"] == 3
    for field in ("vcpus", "memory_mb", "local_gb", "vcpus_used", "memory_mb_used", "free_ram_mb", "running_vms"):
        assert body[field] == sum(h[field] for h in enabled), field
    assert body["vcpus_used"] == 1 and body["running_vms"] == 1
    assert set(body) == {"count", "current_workload", "disk_available_least", "free_disk_gb", "free_ram_mb",
                         "local_gb", "local_gb_used", "memory_mb", "memory_mb_used", "running_vms", "vcpus",
                         "vcpus_used"}
    assert cloud.get(admin, "os-hypervisors/statistics").status_code == 200
    # and from 2.88 the route is gone, as in Nova; members are refused
    gone = cloud.get(admin, "os-hypervisors/statistics", version="2.88")
    assert gone.status_code == 404 and "itemNotFound" in gone.json()
    assert cloud.get(cloud.member(), "os-hypervisors/statistics", version="2.87").status_code == 403


def test_uptime_up_to_287_from_the_compute_report(cloud: Cloud) -> None:
    # given nodes refreshed by their workers
    admin = cloud.admin()
    _refresh_nodes(cloud)
    node = cloud.hosts["compute2"]["node_uuid"]
    # when the uptime of compute2 is asked for at 2.87
    response = cloud.get(admin, f"os-hypervisors/{node}/uptime", version="2.87")
    # then it is the host's uptime line in Nova's body
    assert response.status_code == 200, response.content
    assert response.json()["hypervisor"] == {
        "id": node, "hypervisor_hostname": "compute2", "state": "up", "status": "enabled",
        "uptime": cloud.drivers["compute2"].get_host_uptime()}
    # and from 2.88 the route is gone but show carries the uptime
    assert cloud.get(admin, f"os-hypervisors/{node}/uptime", version="2.88").status_code == 404
    shown = cloud.get(admin, f"os-hypervisors/{node}", version="2.88").json()["hypervisor"]
    assert "up 1 day" in shown["uptime"]
    # and a host whose worker is down cannot answer: 400
    sid = cloud.get(admin, "os-services?host=compute2", version="2.53").json()["services"][0]["id"]
    cloud.put(admin, f"os-services/{sid}", {"forced_down": True}, version="2.53")
    down = cloud.get(admin, f"os-hypervisors/{node}/uptime", version="2.87")
    assert down.status_code == 400 and "unavailable" in down.json()["badRequest"]["message"]
    assert cloud.get(admin, "os-hypervisors/no-such-node/uptime", version="2.87").status_code == 404

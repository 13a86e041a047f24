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


def test_hypervisors_list_detail_show_per_microversion(cloud: Cloud) -> None:
    admin = cloud.admin()
    server = cloud.create_server(admin, "vm1", availability_zone="az1")
    host = cloud.show(admin, server["id"])["OS-EXT-SRV-ATTR:host"]
    listed = cloud.get(admin, "os-hypervisors", version="2.53").json()["hypervisors"]
    assert sorted(h["hypervisor_hostname"] for h in listed) == ["compute1", "compute2", "compute3", "compute4"]
    assert {h["state"] for h in listed} == {"up"}
    detail = cloud.get(admin, "os-hypervisors/detail", version="2.87").json()["hypervisors"]
    assert "vcpus" in detail[0] and "service" in detail[0]
    modern = cloud.get(admin, "os-hypervisors/detail", version="2.88").json()["hypervisors"]
    assert "vcpus" not in modern[0]
    node_uuid = cloud.hosts[host]["node_uuid"]
    shown = cloud.get(admin, f"os-hypervisors/{node_uuid}?with_servers=true", version="2.53").json()["hypervisor"]
    assert shown["servers"] == [{"name": "vm1", "uuid": server["id"]}]
    assert cloud.get(admin, "os-hypervisors/no-such-id", version="2.53").status_code == 404
    assert cloud.get(cloud.member(), "os-hypervisors").status_code == 403
    search = cloud.get(admin, "os-hypervisors/compute/search", version="2.52").json()["hypervisors"]
    assert len(search) == 4

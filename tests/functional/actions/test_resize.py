"""Resize and cold migration within a cell, confirm and revert, with placement allocations checked
at every step; os-migrations; delete in VERIFY_RESIZE; the 409s."""
from __future__ import annotations

from typing import Any

import pytest

from scheduling.placement.services import allocations_get
from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def allocs(consumer: str) -> dict[str, dict[str, int]]:
    return {rp: dict(a["resources"]) if isinstance(a, dict) and "resources" in a else dict(a)
            for rp, a in allocations_get(consumer_uuid=consumer).allocations.items()}


def node_of(cloud: Cloud, host: str) -> str:
    return cloud.hosts[host]["node_uuid"]


def started(cloud: Cloud, client: Any) -> tuple[dict, str]:
    server = cloud.create_server(client, "vm1", availability_zone="az1")
    shown = cloud.wait_for_status(cloud.admin(), server["id"], "ACTIVE")
    return server, shown["OS-EXT-SRV-ATTR:host"]


def migration_of(cloud: Cloud, server_id: str) -> dict:
    migrations = cloud.get(cloud.admin(), f"os-migrations?instance_uuid={server_id}", version="2.80").json()
    return migrations["migrations"][0]


def test_resize_then_confirm(cloud: Cloud) -> None:
    client = cloud.member()
    server, source = started(cloud, client)
    assert allocs(server["id"]) == {node_of(cloud, source): {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 1}}
    small = cloud.flavor("m1.bigger", vcpus=2, ram=1024, disk=2)
    # when resized to another flavor
    assert cloud.action(client, server["id"], {"resize": {"flavorRef": small.flavorid}}).status_code == 202
    admin = cloud.admin()
    shown = cloud.show(admin, server["id"])
    assert shown["status"] == "VERIFY_RESIZE"
    dest = shown["OS-EXT-SRV-ATTR:host"]
    assert dest != source and dest in ("compute1", "compute2")
    # then the server holds the new flavor on the destination, the migration the old one on the source
    migration = migration_of(cloud, server["id"])
    assert migration["status"] == "finished" and migration["migration_type"] == "resize"
    assert migration["source_compute"] == source and migration["dest_compute"] == dest
    assert allocs(server["id"]) == {node_of(cloud, dest): {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 2}}
    assert allocs(migration["uuid"]) == {node_of(cloud, source): {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 1}}
    assert cloud.domain(server["id"]).isActive()
    # a second resize, a reboot or a stop in VERIFY_RESIZE is a 409
    for body in ({"resize": {"flavorRef": "1"}}, {"reboot": {"type": "SOFT"}}, {"os-stop": None}):
        assert cloud.action(client, server["id"], body).status_code == 409
    # confirm
    assert cloud.action(client, server["id"], {"confirmResize": None}).status_code == 204
    shown = cloud.show(admin, server["id"])
    assert shown["status"] == "ACTIVE" and shown["flavor"]["original_name"] == "m1.bigger"
    assert migration_of(cloud, server["id"])["status"] == "confirmed"
    assert allocs(migration["uuid"]) == {}
    assert allocs(server["id"]) == {node_of(cloud, dest): {"VCPU": 2, "MEMORY_MB": 1024, "DISK_GB": 2}}
    assert len(cloud.notifications("instance.resize_confirm.end")) == 1


def test_resize_then_revert(cloud: Cloud) -> None:
    client = cloud.member()
    server, source = started(cloud, client)
    bigger = cloud.flavor("m1.bigger", vcpus=2, ram=1024, disk=2)
    cloud.action(client, server["id"], {"resize": {"flavorRef": bigger.flavorid}})
    migration = migration_of(cloud, server["id"])
    assert cloud.action(client, server["id"], {"revertResize": None}).status_code == 202
    admin = cloud.admin()
    shown = cloud.show(admin, server["id"])
    assert shown["status"] == "ACTIVE" and shown["OS-EXT-SRV-ATTR:host"] == source
    assert shown["flavor"]["original_name"] == "m1.tiny"
    assert migration_of(cloud, server["id"])["status"] == "reverted"
    assert allocs(server["id"]) == {node_of(cloud, source): {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 1}}
    assert allocs(migration["uuid"]) == {}
    assert cloud.domain(server["id"]).isActive()


def test_resize_from_stopped_stays_shutoff(cloud: Cloud) -> None:
    client = cloud.member()
    server, _ = started(cloud, client)
    cloud.action(client, server["id"], {"os-stop": None})
    bigger = cloud.flavor("m1.bigger", vcpus=2, ram=1024, disk=2)
    cloud.action(client, server["id"], {"resize": {"flavorRef": bigger.flavorid}})
    assert cloud.show(client, server["id"])["status"] == "VERIFY_RESIZE"
    cloud.action(client, server["id"], {"confirmResize": None})
    assert cloud.show(client, server["id"])["status"] == "SHUTOFF"


def test_cold_migrate_to_a_host_and_confirm(cloud: Cloud) -> None:
    admin = cloud.admin()
    server, source = started(cloud, admin)
    target = "compute2" if source == "compute1" else "compute1"
    assert cloud.action(admin, server["id"], {"migrate": {"host": target}}, version="2.56").status_code == 202
    shown = cloud.show(admin, server["id"])
    assert shown["status"] == "VERIFY_RESIZE" and shown["OS-EXT-SRV-ATTR:host"] == target
    assert migration_of(cloud, server["id"])["migration_type"] == "migration"
    cloud.action(admin, server["id"], {"confirmResize": None})
    assert cloud.show(admin, server["id"])["status"] == "ACTIVE"


def test_migrate_errors_and_policy(cloud: Cloud) -> None:
    client = cloud.member()
    server, source = started(cloud, client)
    assert cloud.action(client, server["id"], {"migrate": None}).status_code == 403
    admin = cloud.admin()
    same = cloud.action(admin, server["id"], {"migrate": {"host": source}}, version="2.56")
    assert same.status_code == 400
    unknown = cloud.action(admin, server["id"], {"migrate": {"host": "nowhere"}}, version="2.56")
    assert unknown.status_code == 400 and unknown.json()["badRequest"]["message"] == (
        "Compute host nowhere could not be found.")
    # before 2.56 the body is not looked at (Nova): a plain cold migration
    assert cloud.action(admin, server["id"], {"migrate": {"host": "nowhere"}}, version="2.55").status_code == 202
    assert cloud.show(admin, server["id"])["status"] == "VERIFY_RESIZE"


def test_resize_errors(cloud: Cloud) -> None:
    client = cloud.member()
    server, _ = started(cloud, client)
    same = cloud.action(client, server["id"], {"resize": {"flavorRef": "1"}})
    assert same.status_code == 400 and same.json()["badRequest"]["message"] == (
        "When resizing, instances must change flavor!")
    assert cloud.action(client, server["id"], {"resize": {"flavorRef": "nope"}}).status_code == 400
    assert cloud.action(client, server["id"], {"resize": {}}).status_code == 400
    assert cloud.action(client, server["id"], {"confirmResize": None}).status_code == 409
    assert cloud.action(client, server["id"], {"revertResize": None}).status_code == 409


def test_no_valid_host_keeps_the_server_and_its_allocations(cloud: Cloud) -> None:
    client = cloud.member()
    server, source = started(cloud, client)
    huge = cloud.flavor("m1.wide", vcpus=4, ram=8192, disk=40)
    # compute2/compute1 are 4 vCPU hosts with one running the server: another fits only the other host...
    cloud.create_server(client, "filler", availability_zone="az1")
    assert cloud.action(client, server["id"], {"resize": {"flavorRef": huge.flavorid}}).status_code == 202
    shown = cloud.show(cloud.admin(), server["id"])
    assert shown["status"] == "ACTIVE" and shown["OS-EXT-SRV-ATTR:host"] == source
    assert migration_of(cloud, server["id"])["status"] == "error"
    assert allocs(server["id"]) == {node_of(cloud, source): {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 1}}
    # and the conductor's failure is Nova's compute_task.migrate_server error, the server left active
    (error,) = [n["payload"]["nova_object.data"] for n in cloud.notifications("compute_task.migrate_server.error")]
    assert (error["instance_uuid"], error["state"]) == (server["id"], "active")
    assert error["reason"]["nova_object.data"]["exception"] == "NoValidHost"


def test_delete_in_verify_resize_confirms_first(cloud: Cloud) -> None:
    client = cloud.member()
    server, _ = started(cloud, client)
    bigger = cloud.flavor("m1.bigger", vcpus=2, ram=1024, disk=2)
    cloud.action(client, server["id"], {"resize": {"flavorRef": bigger.flavorid}})
    migration = migration_of(cloud, server["id"])
    assert cloud.delete(client, f"servers/{server['id']}").status_code == 204
    assert allocs(migration["uuid"]) == {} and allocs(server["id"]) == {}
    assert cloud.get(client, f"servers/{server['id']}").status_code == 404


def test_os_migrations_shape_per_microversion(cloud: Cloud) -> None:
    client = cloud.member()
    server, _ = started(cloud, client)
    bigger = cloud.flavor("m1.bigger", vcpus=2, ram=1024, disk=2)
    cloud.action(client, server["id"], {"resize": {"flavorRef": bigger.flavorid}})
    admin = cloud.admin()
    old = cloud.get(admin, "os-migrations").json()["migrations"][0]
    assert "migration_type" not in old and "uuid" not in old
    new = cloud.get(admin, "os-migrations", version="2.80").json()["migrations"][0]
    assert {"migration_type", "uuid", "user_id", "project_id"} <= set(new)
    assert cloud.get(client, "os-migrations").status_code == 403
    assert cloud.get(admin, "os-migrations?status=finished", version="2.59").json()["migrations"]
    assert cloud.get(admin, "os-migrations?status=error", version="2.59").json()["migrations"] == []
    assert cloud.get(admin, "os-migrations?limit=x", version="2.59").status_code == 400

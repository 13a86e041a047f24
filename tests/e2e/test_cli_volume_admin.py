"""End to end with the openstack CLI against a live cloud: QoS specs (create, set, unset, associate
with a type, disassociate, delete), retype (``volume set --type --retype-policy``), the block storage
services the real volume worker heartbeats (list, disable with a reason, enable), its back-end pool
and capabilities, and the user message a volume gets when no back end may take it."""
from __future__ import annotations

from typing import Any

import pytest

from .cloud import LiveCloud
from .test_cli_volumes import wait_volume

pytestmark = [pytest.mark.slow, pytest.mark.e2e]
ADMIN = "cloudcore-admin"


def _services_up(cloud: LiveCloud, timeout: float = 90) -> list[dict[str, Any]]:
    wanted = {"cinder-volume", "cinder-backup"}
    cloud.poll(lambda conn: {s.binary for s in conn.block_storage.services() if s.state == "up"},
               lambda up: up == wanted, "the volume worker's services to be up", cloud=ADMIN, timeout=timeout)
    services: list[dict[str, Any]] = cloud.openstack_json("volume", "service", "list", cloud=ADMIN)
    assert {s["Binary"] for s in services if s["State"] == "up"} == wanted, services
    return services


def test_qos_specs_with_the_cli(live_cloud: LiveCloud) -> None:
    cloud = live_cloud
    # given an admin's QoS specs with a consumer and a property
    cloud.openstack("volume", "qos", "create", "--consumer", "front-end", "--property", "total_iops_sec=500",
                    "e2e-qos", cloud=ADMIN)
    shown = cloud.openstack_json("volume", "qos", "show", "e2e-qos", cloud=ADMIN)
    assert shown["consumer"] == "front-end" and "total_iops_sec" in str(shown["properties"])
    # when a property is set and another unset, show says so
    cloud.openstack("volume", "qos", "set", "--property", "read_iops_sec=100", "e2e-qos", cloud=ADMIN)
    cloud.openstack("volume", "qos", "unset", "--property", "total_iops_sec", "e2e-qos", cloud=ADMIN)
    props = str(cloud.openstack_json("volume", "qos", "show", "e2e-qos", cloud=ADMIN)["properties"])
    assert "read_iops_sec" in props and "total_iops_sec" not in props
    # when associated with a type, the list and show name the type
    cloud.openstack("volume", "type", "create", "e2e-qos-type", cloud=ADMIN)
    cloud.openstack("volume", "qos", "associate", "e2e-qos", "e2e-qos-type", cloud=ADMIN)
    listed = {q["Name"]: q for q in cloud.openstack_json("volume", "qos", "list", cloud=ADMIN)}
    assert "e2e-qos-type" in str(listed["e2e-qos"]["Associations"])
    assert "e2e-qos-type" in str(cloud.openstack_json("volume", "qos", "show", "e2e-qos", cloud=ADMIN)["associations"])
    # a member may not see QoS specs
    assert cloud.openstack("volume", "qos", "list", check=False).returncode != 0
    # associated specs are not deleted without --force
    refused = cloud.openstack("volume", "qos", "delete", "e2e-qos", cloud=ADMIN, check=False)
    assert refused.returncode != 0
    cloud.openstack("volume", "qos", "disassociate", "--volume-type", "e2e-qos-type", "e2e-qos", cloud=ADMIN)
    assert not cloud.openstack_json("volume", "qos", "show", "e2e-qos", cloud=ADMIN).get("associations")
    cloud.openstack("volume", "qos", "associate", "e2e-qos", "e2e-qos-type", cloud=ADMIN)
    cloud.openstack("volume", "qos", "delete", "--force", "e2e-qos", cloud=ADMIN)
    assert "e2e-qos" not in {q["Name"] for q in cloud.openstack_json("volume", "qos", "list", cloud=ADMIN)}
    cloud.openstack("volume", "type", "delete", "e2e-qos-type", cloud=ADMIN)


def test_retype_with_the_cli(live_cloud: LiveCloud) -> None:
    cloud = live_cloud
    for name, specs in (("e2e-src", ["--property", "volume_backend_name=pool"]), ("e2e-dst", []),
                        ("e2e-elsewhere", ["--property", "volume_backend_name=lvm"])):
        cloud.openstack("volume", "type", "create", *specs, name, cloud=ADMIN)
    cloud.openstack("volume", "create", "--size", "1", "--type", "e2e-src", "retyped")
    wait_volume(cloud, "volume", "retyped", "available")
    # when the owner retypes it on the same back end, it has the new type
    cloud.openstack("volume", "set", "--type", "e2e-dst", "--retype-policy", "on-demand", "retyped")
    assert wait_volume(cloud, "volume", "retyped", "available")["type"] == "e2e-dst"
    # a type of another back end needs a migration, which policy never refuses
    refused = cloud.openstack("volume", "set", "--type", "e2e-elsewhere", "--retype-policy", "never", "retyped",
                              check=False)
    assert refused.returncode != 0 and "requires migration" in refused.stderr
    assert cloud.openstack_json("volume", "show", "retyped")["type"] == "e2e-dst"
    cloud.openstack("volume", "delete", "retyped")
    cloud.volume_status("volume", "retyped", None)
    assert "retyped" not in {v["Name"] for v in cloud.openstack_json("volume", "list")}
    cloud.openstack("volume", "type", "delete", "e2e-src", "e2e-dst", "e2e-elsewhere", cloud=ADMIN)


def test_services_pools_and_messages_with_the_cli(live_cloud: LiveCloud) -> None:
    cloud = live_cloud
    # given the volume worker heartbeats its services
    services = {s["Binary"]: s for s in _services_up(cloud)}
    host = services["cinder-volume"]["Host"]
    assert services["cinder-volume"]["Status"] == "enabled" and host.endswith("@pool")
    # its one pool reports the pool directory's capacity, and its capabilities name the back end
    pools = cloud.openstack_json("volume", "backend", "pool", "list", "--long", cloud=ADMIN)
    assert [p["Name"] for p in pools] == [f"{host}#pool"]
    capacity = pools[0]["Capabilities"]
    assert capacity["total_capacity_gb"] > 0 and capacity["storage_protocol"] == "file"
    assert capacity["volume_backend_name"] == "pool" and 0 <= capacity["free_capacity_gb"] <= capacity[
        "total_capacity_gb"]
    capabilities = cloud.openstack_json("volume", "backend", "capability", "show", host, cloud=ADMIN)
    assert [c["Key"] for c in capabilities] == ["thin_provisioning"]
    try:
        # when an admin disables cinder-volume with a reason, the list shows it
        cloud.openstack("volume", "service", "set", "--disable", "--disable-reason", "e2e maintenance", host,
                        "cinder-volume", cloud=ADMIN)
        listed = {s["Binary"]: s for s in cloud.openstack_json("volume", "service", "list", "--long", cloud=ADMIN)}
        assert (listed["cinder-volume"]["Status"], listed["cinder-volume"]["Disabled Reason"]) == (
            "disabled", "e2e maintenance")
        # and a new volume finds no back end: error, with Cinder's message for its project
        cloud.openstack("volume", "create", "--size", "1", "no-backend")
        vol = wait_volume(cloud, "volume", "no-backend", "error")
        messages = cloud.openstack_json("volume", "message", "list", "--os-volume-api-version", "3.3")
        mine = [m for m in messages if m["Resource UUID"] == vol["id"]]
        assert [m["Event ID"] for m in mine] == ["VOLUME_VOLUME_001_003"], messages
        # (``volume message show`` is not used: openstacksdk's Message reads a show's body under
        # "messages", so every field but the id shows None against Cinder too)
        assert mine[0]["User Message"] == "schedule allocate volume:Could not find any available weighted backend."
        cloud.openstack("volume", "message", "delete", mine[0]["ID"], "--os-volume-api-version", "3.3")
    finally:
        cloud.openstack("volume", "service", "set", "--enable", host, "cinder-volume", cloud=ADMIN)
    assert {s["Binary"]: s for s in cloud.openstack_json("volume", "service", "list", cloud=ADMIN)}[
        "cinder-volume"]["Status"] == "enabled"
    cloud.openstack("volume", "delete", "no-backend")

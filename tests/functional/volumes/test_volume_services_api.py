"""Cinder's ``os-services`` through the API: the services the volume worker heartbeats, up or down
by their last heartbeat, filtered by host and binary; admins enable and disable them."""
from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from tests.functional.volumes.test_volume_api import call

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])
S = "/volume/v3/os-services"


def _heartbeat() -> dict[str, str]:
    """What the volume worker's heartbeat thread does every REPORT_INTERVAL."""
    from volumes.servicegroup import worker_heartbeat, worker_hosts

    worker_heartbeat()
    return {binary: host for binary, host in worker_hosts()}


def test_services_are_listed_up_or_down_by_their_heartbeat(bfv: Any) -> None:
    from django.utils import timezone

    from volumes.models import VolumeService

    admin = bfv.admin()
    hosts = _heartbeat()
    # when an admin lists them, both services of the worker are up and enabled
    listed = call(admin, "get", S, version="volume 3.49").json()["services"]
    by_binary = {s["binary"]: s for s in listed}
    assert set(by_binary) == {"cinder-volume", "cinder-backup"}
    volume = by_binary["cinder-volume"]
    assert (volume["host"], volume["zone"], volume["status"], volume["state"], volume["backend_state"]) == (
        hosts["cinder-volume"], "nova", "enabled", "up", "up")
    assert volume["updated_at"] and volume["disabled_reason"] is None and volume["frozen"] is False
    assert "backend_state" not in by_binary["cinder-backup"]
    # and at 3.0 there is no cluster nor backend_state
    assert {"cluster", "backend_state"}.isdisjoint(call(admin, "get", S, version="volume 3.0").json()["services"][0])
    # the filters pick by binary and host
    only = call(admin, "get", f"{S}?binary=cinder-backup").json()["services"]
    assert [s["host"] for s in only] == [hosts["cinder-backup"]]
    assert call(admin, "get", f"{S}?host=nowhere").json() == {"services": []}
    # a host filter matches the host and its back ends (Cinder's host@backend#pool)
    machine = hosts["cinder-backup"]
    assert sorted(s["binary"] for s in call(admin, "get", f"{S}?host={machine}").json()["services"]) == [
        "cinder-backup", "cinder-volume"]
    # and an admin sees a volume's back-end host, which names the service's host
    vid = call(bfv.member(), "post", "/volume/v3/volumes", {"volume": {"size": 1}}).json()["volume"]["id"]
    shown = call(admin, "get", f"/volume/v3/volumes/{vid}").json()["volume"]
    assert shown["os-vol-host-attr:host"] == f"{hosts['cinder-volume']}#pool"
    assert shown["os-vol-mig-status-attr:migstat"] is None and shown["migration_status"] is None
    assert {"os-vol-host-attr:host", "migration_status"}.isdisjoint(
        call(bfv.member(), "get", f"/volume/v3/volumes/{vid}").json()["volume"])
    # when the worker stops heartbeating for longer than SERVICE_DOWN_TIME, it is down
    VolumeService.objects.update(last_seen_up=timezone.now() - timedelta(hours=1))
    assert {s["state"] for s in call(admin, "get", S).json()["services"]} == {"down"}
    # and a member may not list them
    refused = call(bfv.member(), "get", S)
    assert refused.status_code == 403 and "volume_extension:services:index" in refused.json()["forbidden"]["message"]


def test_admin_disables_with_a_reason_and_enables(bfv: Any) -> None:
    admin = bfv.admin()
    host = _heartbeat()["cinder-volume"]
    # when the admin disables cinder-volume with a reason
    done = call(admin, "put", f"{S}/disable-log-reason",
                {"host": host, "binary": "cinder-volume", "disabled_reason": "maintenance"})
    assert done.status_code == 200
    assert done.json() == {"host": host, "binary": "cinder-volume", "disabled": True, "status": "disabled",
                           "disabled_reason": "maintenance"}
    # then the list shows it disabled with the reason
    shown = call(admin, "get", f"{S}?binary=cinder-volume").json()["services"][0]
    assert (shown["status"], shown["disabled_reason"]) == ("disabled", "maintenance")
    # when enabled again, the reason goes
    enabled = call(admin, "put", f"{S}/enable", {"host": host, "binary": "cinder-volume"}).json()
    assert (enabled["status"], enabled["disabled"]) == ("enabled", False)
    shown = call(admin, "get", f"{S}?binary=cinder-volume").json()["services"][0]
    assert (shown["status"], shown["disabled_reason"]) == ("enabled", None)
    # a plain disable takes no reason
    assert call(admin, "put", f"{S}/disable", {"host": host, "binary": "cinder-volume"}).json()["status"] == "disabled"
    # an unknown service or action is a 404, a missing host or an empty reason a 400
    assert call(admin, "put", f"{S}/disable", {"host": "nowhere", "binary": "cinder-volume"}).status_code == 404
    assert call(admin, "put", f"{S}/freeze-it", {"host": host, "binary": "cinder-volume"}).status_code == 404
    # freeze and thaw: an unknown host is a 400, and there is no replication to freeze
    assert call(admin, "put", f"{S}/freeze", {"host": "nowhere"}).status_code == 400
    assert "no replication" in call(admin, "put", f"{S}/thaw", {"host": host}).json()["badRequest"]["message"]
    assert call(admin, "put", f"{S}/disable", {"binary": "cinder-volume"}).status_code == 400
    assert call(admin, "put", f"{S}/disable-log-reason",
                {"host": host, "binary": "cinder-volume", "disabled_reason": " "}).status_code == 400
    # and a member may not
    assert call(bfv.member(), "put", f"{S}/enable", {"host": host, "binary": "cinder-volume"}).status_code == 403


def test_pools_and_capabilities_are_what_the_worker_reported(bfv: Any) -> None:
    from volumes.backends import get_backend

    admin, member = bfv.admin(), bfv.member()
    host = _heartbeat()["cinder-volume"]
    # given a 3 GB volume of the default type lives in the pool
    call(member, "post", "/volume/v3/volumes", {"volume": {"size": 3}})
    _heartbeat()
    # when an admin lists the pools, there is the one pool of the worker's back end
    assert call(admin, "get", "/volume/v3/scheduler-stats/get_pools").json() == {"pools": [{"name": f"{host}#pool"}]}
    detail = call(admin, "get", "/volume/v3/scheduler-stats/get_pools?detail=true").json()["pools"][0]
    caps = detail["capabilities"]
    # with the capacity of the file system under the pool directory and the GB its volumes hold
    total, free = get_backend().capacity()
    assert (caps["total_capacity_gb"], caps["allocated_capacity_gb"]) == (total, 3)
    assert 0 <= caps["free_capacity_gb"] <= total
    assert (caps["volume_backend_name"], caps["pool_name"], caps["thin_provisioning_support"]) == ("pool", "pool", True)
    # the 3.28 filters: a type for another back end has no pool, a type of this one has it
    call(admin, "post", "/volume/v3/types", {"volume_type": {"name": "elsewhere",
                                                              "extra_specs": {"volume_backend_name": "lvm"}}})
    elsewhere = call(admin, "get", "/volume/v3/scheduler-stats/get_pools?volume_type=elsewhere",
                     version="volume 3.28").json()
    assert elsewhere == {"pools": []}
    named = call(admin, "get", f"/volume/v3/scheduler-stats/get_pools?name={host}%23pool", version="volume 3.28")
    assert [p["name"] for p in named.json()["pools"]] == [f"{host}#pool"]
    # and the host's capabilities name the same back end
    shown = call(admin, "get", f"/volume/v3/capabilities/{host}").json()
    assert (shown["namespace"], shown["volume_backend_name"], shown["storage_protocol"], shown["vendor_name"]) == (
        f"OS::Storage::Capabilities::{host}", "pool", "file", "cloudcore")
    assert "thin_provisioning" in shown["properties"]
    assert call(admin, "get", "/volume/v3/capabilities/nowhere").status_code == 404
    # a disabled back end takes no volumes: its pool is not listed
    call(admin, "put", "/volume/v3/os-services/disable", {"host": host, "binary": "cinder-volume"})
    assert call(admin, "get", "/volume/v3/scheduler-stats/get_pools").json() == {"pools": []}
    # and members may see none of it
    assert call(member, "get", "/volume/v3/scheduler-stats/get_pools").status_code == 403
    assert call(member, "get", f"/volume/v3/capabilities/{host}").status_code == 403

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
    from volumes.servicegroup import volume_service_heartbeat, worker_hosts

    for binary, host in worker_hosts():
        volume_service_heartbeat(binary=binary, host=host)
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
    assert call(admin, "put", f"{S}/disable", {"binary": "cinder-volume"}).status_code == 400
    assert call(admin, "put", f"{S}/disable-log-reason",
                {"host": host, "binary": "cinder-volume", "disabled_reason": " "}).status_code == 400
    # and a member may not
    assert call(bfv.member(), "put", f"{S}/enable", {"host": host, "binary": "cinder-volume"}).status_code == 403

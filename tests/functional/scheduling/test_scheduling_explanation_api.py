"""Reading a scheduling decision as a user and as an operator (issue 22): the PENDING server's
fault in words without host names, the admin-only explanation endpoint and dry run, the failing
event's details at 2.84, the error notification's summary, ``manage.py scheduler explain``."""
from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from scheduling.models import Allocation, SchedulingTraceRecord
from servers.models import InstanceAction

ALL = ["default", "cell0", "cell1", "cell2"]
pytestmark = pytest.mark.django_db(databases=ALL)
WORDS = ("No valid host was found. There are not enough hosts available. "
         "Not enough RAM: needs 30000 MB, the most free on any host is 8192 MB.")


@pytest.fixture
def pending(cloud, settings):
    """A member's server that waits in PENDING for 30000 MB (every host has 8192 MB)."""
    settings.USE_PENDING_STATE = True
    huge = cloud.flavor("m1.huge", vcpus=1, ram=30000)
    member = cloud.member()
    sid = cloud.create_server(member, "waits", flavor=huge.flavorid)["id"]
    return member, sid, huge


def test_the_user_reads_the_shortfall_without_host_names(cloud, pending):
    member, sid, _huge = pending
    shown = cloud.wait_for_status(member, sid, "PENDING", version="2.105")
    assert shown["fault"]["message"] == WORDS
    assert "compute" not in str(shown["fault"])
    # and the explanation endpoint is not theirs
    response = cloud.get(member, f"servers/{sid}/os-scheduling-explanation")
    assert response.status_code == 403
    assert "cloudcore:os-scheduling-explanation:show" in response.json()["forbidden"]["message"]
    assert cloud.post(member, "os-scheduling-explanation", {"explain": {"flavorRef": "m1.huge"}}).status_code == 403


def test_the_admin_reads_the_whole_trace(cloud, pending):
    _member, sid, _huge = pending
    admin = cloud.admin()
    response = cloud.get(admin, f"servers/{sid}/os-scheduling-explanation")
    assert response.status_code == 200
    explanation = response.json()["scheduling_explanation"]
    assert explanation["result"] == "no_valid_host" and explanation["message"] == WORDS
    shortfall = explanation["trace"]["placement"]["shortfall"]
    assert shortfall["resources"] == {"MEMORY_MB": {"requested": 30000, "short_on": 4, "most_free": 8192}}
    assert sorted(n["host"] for n in shortfall["nearest"]) == ["compute1", "compute2", "compute3", "compute4"]
    assert "MEMORY_MB: 30000 requested, short on 4 providers, most free 8192" in explanation["text"]
    # the record is keyed by the request id of the create action
    action = InstanceAction.objects.using("cell0").get(instance_uuid=sid)
    assert explanation["request_id"] == action.request_id
    assert cloud.get(admin, f"servers/{sid}/os-scheduling-explanation?request_id=other").status_code == 404


def test_the_failing_event_details_and_the_error_notification_carry_the_trace(cloud, pending):
    member, sid, _huge = pending
    admin = cloud.admin()
    actions = cloud.get(admin, f"servers/{sid}/os-instance-actions").json()["instanceActions"]
    event = cloud.get(admin, f"servers/{sid}/os-instance-actions/{actions[0]['request_id']}",
                      version="2.84").json()["instanceAction"]["events"][0]
    assert event["result"] == "Error"
    assert event["details"].startswith(WORDS) and "nearest compute1: MEMORY_MB short by 21808" in event["details"]
    (error,) = [n for n in cloud.notifications("compute_task.build_instances.error")]
    summary = error["payload"]["nova_object.data"]["scheduling_trace"]
    assert summary["result"] == "no_valid_host" and summary["candidates"] == 0
    assert summary["shortfall"]["resources"]["MEMORY_MB"]["short_on"] == 4
    assert {n["host"] for n in summary["nearest"]} <= {"compute1", "compute2", "compute3", "compute4"}
    assert summary["nearest"][0]["short"] == {"MEMORY_MB": 21808}


def test_the_dry_run_through_the_api_allocates_nothing(cloud, pending):
    _member, sid, huge = pending
    admin = cloud.admin()
    allocations = Allocation.objects.count()
    answer = cloud.post(admin, "os-scheduling-explanation", {"explain": {"flavorRef": huge.flavorid}}).json()
    dry = answer["scheduling_dry_run"]
    assert dry["fits"] is False and dry["message"] == WORDS
    # no host has 30000 MB in all: each is said too small, with nothing to free on it
    assert dry["suggestions"][0]["changes"] == ["too small: 8192 MB of RAM in all, 30000 MB needed"]
    assert dry["suggestions"][0]["free_servers"] == []
    tiny = cloud.post(admin, "os-scheduling-explanation",
                      {"explain": {"flavorRef": "m1.tiny", "imageRef": "tiny", "availability_zone": "az2"}}).json()
    assert tiny["scheduling_dry_run"]["fits"] is True
    assert sorted(tiny["scheduling_dry_run"]["hosts"]) == ["compute3", "compute4"]
    own = cloud.post(admin, "os-scheduling-explanation", {"explain": {"server_id": sid}}).json()
    assert own["scheduling_dry_run"]["fits"] is False
    assert Allocation.objects.count() == allocations
    assert SchedulingTraceRecord.objects.filter(instance_uuid=sid).count() == 1
    bad = cloud.post(admin, "os-scheduling-explanation", {"explain": {"imageRef": "tiny"}})
    assert bad.status_code == 400


def test_the_command_explains_a_server_and_dry_runs_a_flavor(cloud, pending):
    _member, sid, _huge = pending
    out = io.StringIO()
    call_command("scheduler", "explain", sid, "--now", stdout=out)
    text = out.getvalue()
    assert f"server {sid} request" in text and WORDS in text and "does not fit now" in text
    assert "compute1 (cell cell1): too small: 8192 MB of RAM in all, 30000 MB needed" in text
    out = io.StringIO()
    call_command("scheduler", "explain", "--flavor", "m1.tiny", "--az", "az1", stdout=out)
    assert out.getvalue().startswith("fits now on: compute")
    with pytest.raises(CommandError, match="No scheduling trace"):
        call_command("scheduler", "explain", "00000000-0000-0000-0000-000000000000", stdout=io.StringIO())


def test_the_command_finds_a_server_by_its_name(cloud, pending):
    member, sid, _huge = pending
    out = io.StringIO()
    call_command("scheduler", "explain", "waits", stdout=out)  # the member's server, named by an operator
    assert out.getvalue().startswith(f"server {sid} request ") and WORDS in out.getvalue()
    with pytest.raises(CommandError, match="^No server with a name or ID of 'nowhere' exists.$"):
        call_command("scheduler", "explain", "nowhere", stdout=io.StringIO())
    cloud.create_server(member, "waits")  # a second server of that name (it fits)
    with pytest.raises(CommandError, match="^More than one server exists with the name 'waits'.$"):
        call_command("scheduler", "explain", "waits", stdout=io.StringIO())


def test_the_openapi_schema_documents_the_endpoints():
    paths = APIClient().get("/api/schema/?format=json").json()["paths"]
    assert "get" in paths["/compute/v2.1/servers/{server_id}/os-scheduling-explanation"]
    assert "post" in paths["/compute/v2.1/os-scheduling-explanation"]


def test_the_dry_run_through_the_api_honours_a_group_hint(cloud):
    # given an anti-affinity group with one member in az1 (compute1 and compute2)
    member, admin = cloud.member(), cloud.admin()
    group = cloud.post(member, "os-server-groups", {"server_group": {"name": "spread", "policy": "anti-affinity"}},
                       version="2.64").json()["server_group"]
    first = cloud.create_server(member, "web-1", hints={"group": group["id"]}, availability_zone="az1")
    used = cloud.show(admin, first["id"])["OS-EXT-SRV-ATTR:host"]
    other = ({"compute1", "compute2"} - {used}).pop()
    body = {"explain": {"flavorRef": "m1.tiny", "availability_zone": "az1", "scheduler_hints": {"group": group["id"]}}}
    # when another member is dry-run, then only the other host fits
    answer = cloud.post(admin, "os-scheduling-explanation", body).json()["scheduling_dry_run"]
    assert answer["fits"] is True and answer["hosts"] == [other]
    # and with a member on each host, each host's suggestion names the member in the way
    second = cloud.create_server(member, "web-2", hints={"group": group["id"]}, availability_zone="az1")
    answer = cloud.post(admin, "os-scheduling-explanation", body).json()["scheduling_dry_run"]
    assert answer["fits"] is False
    blocking = {s["host"]: [m["name"] for m in s["group_members"]] for s in answer["suggestions"] if s["group_members"]}
    assert blocking == {used: ["web-1"], other: ["web-2"]}
    assert cloud.show(admin, second["id"])["OS-EXT-SRV-ATTR:host"] == other
    # and a group that does not exist is a bad request, as on boot
    body["explain"]["scheduler_hints"] = {"group": "00000000-0000-0000-0000-000000000000"}
    assert cloud.post(admin, "os-scheduling-explanation", body).status_code == 400


def test_the_console_shows_the_trace_to_the_admin_only(cloud, pending):
    from tests.functional.console.conftest import login

    member, sid, _huge = pending
    cloud.wait_for_status(member, sid, "PENDING", version="2.105")
    # the admin's server page shows the fault and, under it, the whole trace with host names
    page = login("ops", "admin", ["admin"]).get(f"/servers/{sid}/").content.decode()
    assert 'id="scheduling-explanation"' in page
    assert "MEMORY_MB: 30000 requested, short on 4 providers, most free 8192" in page and "compute1" in page
    # the member's page shows the fault in words, without the trace or any host name
    mine = login("demo-viewer", "demo", ["member"]).get(f"/servers/{sid}/").content.decode()
    assert "Not enough RAM: needs 30000 MB" in mine
    assert 'id="scheduling-explanation"' not in mine and "compute1" not in mine

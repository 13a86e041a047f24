"""A PENDING or ERROR server's page explains why (the fault in words for everyone, the scheduler's
whole trace where policy allows it) and offers the ways out that apply: rebuild (a PENDING
server's retry, or an ERROR server that once ran) and, for admins, reset state. Each button is a
compute API call with the user's token; a refusal is shown in the API's words."""
from __future__ import annotations

import html
from typing import Any

import pytest
from django.test import Client

from scheduling.models import SchedulingTraceBody
from tests.apihelpers import auth_client, make_identity

from .conftest import login

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "cell0", "cell1", "cell2"])


def _body(client: Client, server_id: str) -> str:
    return client.get(f"/servers/{server_id}/").content.decode()


def _unschedulable(cloud: Any, client: Any) -> dict[str, Any]:
    """A server no host can take (more RAM than any host has)."""
    cloud.flavor("m1.huge", ram=20000)
    return cloud.create_server(client, "too-big", flavor="m1.huge")


def _fault_card(body: str) -> str:
    start = body.index('id="server-fault"')
    return body[start:body.index("</section>", start)]


def test_admin_sees_the_fault_the_trace_and_both_ways_out_of_error(cloud: Any) -> None:
    # given a server that failed to schedule, opened by the cloud admin
    server = _unschedulable(cloud, cloud.member())
    admin = login("admin", "admin", ["admin"])
    card = _fault_card(admin.get(f"/servers/{server['id']}/").content.decode())
    # then the fault is shown in words, with the scheduler's whole trace under it
    assert "Why this server is in ERROR" in card and "No valid host" in card
    assert 'id="scheduling-explanation"' in card
    # and reset state (to active or error) is offered, not a rebuild: it never reached a host
    assert 'value="reset_state"' in card and '<option value="active">' in card
    assert 'value="rebuild"' not in card and 'id="never-launched"' in card and "or reset its state" in card


def test_member_sees_the_fault_in_words_and_no_admin_action(cloud: Any) -> None:
    user, project = make_identity("demo", project="demo", roles=["member"], password="pw")
    server = _unschedulable(cloud, auth_client(user, project))
    member = Client()
    assert member.post("/login/", {"username": "demo", "password": "pw"}).status_code == 302
    card = _fault_card(member.get(f"/servers/{server['id']}/").content.decode())
    assert "No valid host" in card
    assert 'id="scheduling-explanation"' not in card  # the trace names hosts: admins only by default
    assert 'value="reset_state"' not in card and 'value="delete"' in card
    # and a forged reset is refused by the API's policy, in its words
    response = member.post(f"/servers/{server['id']}/action/", {"op": "reset_state", "state": "active"},
                           follow=True)
    assert ("Reset state refused: Policy doesn't allow os_compute_api:os-admin-actions:reset_state to be "
            "performed.") in html.unescape(response.content.decode())
    assert cloud.show(auth_client(user, project), server["id"])["status"] == "ERROR"


def test_pending_server_offers_its_retry_and_only_a_reset_to_error(cloud: Any, settings: Any) -> None:
    settings.USE_PENDING_STATE = True
    server = _unschedulable(cloud, cloud.member())
    card = _fault_card(login("admin", "admin", ["admin"]).get(f"/servers/{server['id']}/").content.decode())
    assert "Waiting for a host" in card and "USE_PENDING_STATE" in card
    assert "Retry the build (rebuild)" in card
    assert '<option value="error">' in card and '<option value="active">' not in card


def test_retrying_a_pending_build_from_the_console_schedules_it_again(cloud: Any, settings: Any) -> None:
    # given a PENDING server of a member
    settings.USE_PENDING_STATE = True
    user, project = make_identity("demo", project="demo", roles=["member"], password="pw")
    api = auth_client(user, project)
    server = _unschedulable(cloud, api)
    member = Client()
    assert member.post("/login/", {"username": "demo", "password": "pw"}).status_code == 302
    # when room appears and the member retries from the fault card
    cloud.add_host("compute9", cell="cell2", zone="az2", vcpus=16, memory_mb=65536)
    response = member.post(f"/servers/{server['id']}/action/", {"op": "rebuild", "image": cloud.image_id},
                           follow=True)
    # then the API accepted it and the server is built in a real cell
    assert "Rebuild accepted." in response.content.decode()
    assert cloud.show(api, server["id"])["status"] == "ACTIVE" and cloud.cell_of(server["id"]) == "cell2"


def test_a_refused_retry_is_shown_in_the_apis_words(cloud: Any, settings: Any) -> None:
    # given a PENDING server an admin locked
    settings.USE_PENDING_STATE = True
    user, project = make_identity("demo", project="demo", roles=["member"], password="pw")
    server = _unschedulable(cloud, auth_client(user, project))
    assert cloud.action(cloud.admin(), server["id"], {"lock": None}).status_code == 202
    member = Client()
    assert member.post("/login/", {"username": "demo", "password": "pw"}).status_code == 302
    # when the member retries the build
    response = member.post(f"/servers/{server['id']}/action/", {"op": "rebuild", "image": cloud.image_id},
                           follow=True)
    # then the lock's refusal is shown as the API says it
    assert f"Rebuild refused: Instance {server['id']} is locked" in response.content.decode()


def test_an_error_server_that_once_ran_is_rebuilt_from_the_console(cloud: Any) -> None:
    # given a member's server that ran and was reset to ERROR by an admin
    user, project = make_identity("demo", project="demo", roles=["member"], password="pw")
    api = auth_client(user, project)
    server = cloud.create_server(api, "fell-over")
    assert cloud.action(cloud.admin(), server["id"], {"os-resetState": {"state": "error"}}).status_code == 202
    member = Client()
    assert member.post("/login/", {"username": "demo", "password": "pw"}).status_code == 302
    card = _fault_card(_body(member, server["id"]))
    assert 'value="rebuild"' in card and 'id="never-launched"' not in card
    # when the member rebuilds it from the fault card
    response = member.post(f"/servers/{server['id']}/action/", {"op": "rebuild", "image": cloud.image_id},
                           follow=True)
    # then it runs again
    assert "Rebuild accepted." in response.content.decode()
    assert cloud.show(api, server["id"])["status"] == "ACTIVE"


def test_admin_resets_an_error_server_to_active_from_the_console(cloud: Any) -> None:
    admin = login("admin", "admin", ["admin"])
    server = cloud.create_server(cloud.member(), "fell-over")
    assert cloud.action(cloud.admin(), server["id"], {"os-resetState": {"state": "error"}}).status_code == 202
    response = admin.post(f"/servers/{server['id']}/action/", {"op": "reset_state", "state": "active"}, follow=True)
    assert "Reset state accepted." in response.content.decode()
    assert cloud.show(cloud.admin(), server["id"])["status"] == "ACTIVE"


def test_unlock_is_offered_only_to_who_may_lift_the_lock(cloud: Any) -> None:
    # given a member's ACTIVE server
    user, project = make_identity("demo", project="demo", roles=["member"], password="pw")
    api = auth_client(user, project)
    server = cloud.create_server(api, "locked-one")
    cloud.wait_for_status(cloud.admin(), server["id"], "ACTIVE")
    member = Client()
    assert member.post("/login/", {"username": "demo", "password": "pw"}).status_code == 302
    admin = login("operator", "admin", ["admin"])
    # when the member locks it, the member is offered Unlock
    assert cloud.action(api, server["id"], {"lock": None}).status_code == 202
    assert 'value="unlock"' in _body(member, server["id"])
    # when an admin (another project) locks it, the member is not, and is told why; the admin is
    assert cloud.action(api, server["id"], {"unlock": None}).status_code == 202
    assert cloud.action(cloud.admin(), server["id"], {"lock": None}).status_code == 202
    body = _body(member, server["id"])
    assert 'value="unlock"' not in body and "Locked by an administrator" in body
    assert 'value="unlock"' in _body(admin, server["id"])
    # and the API agrees: the member's unlock is refused
    assert cloud.action(api, server["id"], {"unlock": None}).status_code == 403


def test_a_second_server_with_the_same_failure_shows_the_whole_trace(cloud: Any) -> None:
    # given two servers that failed to schedule for the same reason (one trace body stored)
    first = _unschedulable(cloud, cloud.member())
    second = cloud.create_server(cloud.member(), "too-big-again", flavor="m1.huge")
    assert SchedulingTraceBody.objects.count() == 1
    admin = login("admin", "admin", ["admin"])
    # then the second server's page shows the same whole trace as the first one's
    traces = []
    for server in (first, second):
        card = _fault_card(admin.get(f"/servers/{server['id']}/").content.decode())
        start = card.index('id="scheduling-explanation"')
        trace = card[card.index("<pre", start):card.index("</pre>", start)]
        assert "placement: 0 candidates" in html.unescape(trace) and "MEMORY_MB" in trace
        traces.append(trace)
    assert traces[0] == traces[1]


def _dry_run_card(body: str) -> str:
    start = body.index('id="scheduling-dry-run"')
    return html.unescape(body[start:body.index("</div>", start)])


def test_admin_sees_what_would_make_a_pending_server_fit_and_when_it_fits(cloud: Any, settings: Any) -> None:
    # given a PENDING server of 20000 MB that no host can take, and a new host of 24576 MB on which
    # another server of 16384 MB runs (the only host it fits on)
    settings.USE_PENDING_STATE = True
    admin = login("admin", "admin", ["admin"])
    server = _unschedulable(cloud, cloud.member())
    cloud.add_host("compute9", cell="cell2", zone="az2", vcpus=16, memory_mb=24576)
    cloud.flavor("m1.big", ram=16384)
    blocker = cloud.create_server(cloud.member(), "blocker", flavor="m1.big")
    assert cloud.show(cloud.admin(), blocker["id"])["OS-EXT-SRV-ATTR:host"] == "compute9"
    # when the cloud admin opens the PENDING server's page
    card = _dry_run_card(_body(admin, server["id"]))
    # then the dry run says it does not fit, and that freeing the blocker on compute9 would do
    assert "Would it fit now?" in card and "No. Not enough RAM" in card
    first = card[card.index("<li>"):card.index("</li>")]
    assert "<strong>compute9</strong>" in first and "free 11808 MB of RAM" in first
    assert f'href="/servers/{blocker["id"]}/">blocker</a>' in first
    # and the hosts that could never take it are said too small
    assert "too small:" in card and "20000 MB needed" in card
    # when the blocker is deleted, the page says where it would fit now
    assert cloud.delete(cloud.admin(), f"servers/{blocker['id']}").status_code == 204
    card = _dry_run_card(_body(admin, server["id"]))
    assert "Yes, on compute9 (best first): retrying the build would place it." in card
    # and nothing of it is allocated by asking
    from scheduling.models import Allocation
    assert not Allocation.objects.filter(consumer__uuid=server["id"]).exists()


def test_no_dry_run_for_a_member_nor_for_a_server_that_has_a_host(cloud: Any) -> None:
    # a member's own unschedulable server: the dry run is for admins (it names hosts)
    admin = login("admin", "admin", ["admin"])
    user, project = make_identity("demo", project="demo", roles=["member"], password="pw")
    server = _unschedulable(cloud, auth_client(user, project))
    member = Client()
    assert member.post("/login/", {"username": "demo", "password": "pw"}).status_code == 302
    assert 'id="scheduling-dry-run"' not in _body(member, server["id"])
    # and an ERROR server that once ran on a host: its request was placed, nothing to ask
    ran = cloud.create_server(cloud.member(), "ran")
    assert cloud.action(cloud.admin(), ran["id"], {"os-resetState": {"state": "error"}}).status_code == 202
    admin_page = _body(admin, ran["id"])
    assert 'id="server-fault"' in admin_page and 'id="scheduling-dry-run"' not in admin_page

"""The console through Django's test client: login, role-gated pages, policy grants, errors."""
from __future__ import annotations

import pytest
from django.test import Client

from cloudcore.core import policy
from tests.apihelpers import make_identity

from .conftest import login

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def test_anonymous_is_sent_to_login() -> None:
    response = Client().get("/hosts/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_wrong_password_is_explained() -> None:
    make_identity("alice", project="demo", roles=["member"], password="right")
    response = Client().post("/login/", {"username": "alice", "password": "wrong"})
    assert response.status_code == 401
    assert b"Wrong user name or password." in response.content


def test_admin_sees_overview_with_cells(cells: dict) -> None:
    client = login("admin", "admin", ["admin"])
    response = client.get("/")
    assert response.status_code == 200
    body = response.content.decode()
    for name in ("cell0", "cell1", "cell2"):
        assert name in body
    assert "cloud admin" in body


def test_an_htmx_poll_gets_only_its_fragment(cells: dict) -> None:
    client = login("admin", "admin", ["admin"])
    # given the overview, whose live region polls itself
    page = client.get("/").content.decode()
    assert 'id="overview-live"' in page and 'hx-trigger="every' in page and "<html" in page
    # when htmx polls it, the answer is that region alone (no page around it)
    poll = client.get("/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="overview-live").content.decode()
    assert poll.lstrip().startswith('<div id="overview-live"') and "<html" not in poll
    assert "Capacity per cell" in poll
    # and an htmx request for an unknown target gets the whole page
    assert "<html" in client.get("/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="nope").content.decode()


def test_notifications_are_paged_on_the_server(cells: dict) -> None:
    from cloudcore.core.models import NotificationRecord

    client = login("admin", "admin", ["admin"])
    NotificationRecord.objects.bulk_create(
        NotificationRecord(event_type="test.event", publisher_id="p", priority="INFO", payload={"n": i})
        for i in range(60))
    first = client.get("/notifications/").content.decode()
    assert "page 1 of 2" in first and "page=2" in first
    assert "page 2 of 2" in client.get("/notifications/?page=2").content.decode()


@pytest.mark.parametrize("page", ["/hosts/", "/policy/", "/notifications/", "/migrations/"])
def test_member_cannot_reach_admin_pages(page: str, cells: dict) -> None:
    client = login("demo", "demo", ["member"])
    assert client.get(page).status_code == 403


def test_member_overview_has_no_admin_data(cells: dict) -> None:
    client = login("demo", "demo", ["member"])
    response = client.get("/")
    assert response.status_code == 200
    assert "Capacity per cell" not in response.content.decode()


def test_admin_grants_and_revokes_a_rule_for_a_project(cells: dict) -> None:
    rule = "test:console:rule"
    policy.register(rule, "nobody", "a rule for the console test")
    _, demo = make_identity("demo", project="demo", roles=["member"])
    client = login("admin", "admin", ["admin"])
    # when the admin grants the rule to project demo alone
    response = client.post("/policy/change/", {"rule": rule, "verb": "grant", "project": demo.id}, follow=True)
    # then the page confirms it and the grant is real
    assert "Granted test:console:rule for every member of project demo." in response.content.decode()
    assert policy.grants_of(rule) == [{"group": f"project-members:{demo.id}", "project": demo.id}]
    client.post("/policy/change/", {"rule": rule, "verb": "revoke", "project": demo.id})
    assert policy.grants_of(rule) == []


def test_policy_change_needs_csrf_token(cells: dict) -> None:
    make_identity("admin", project="admin", roles=["admin"], password="pw")
    client = Client(enforce_csrf_checks=True)
    client.post("/login/", {"username": "admin", "password": "pw"})
    assert client.post("/policy/change/", {"rule": "x", "verb": "grant"}).status_code == 403


def test_notifications_page_filters_by_type(cells: dict) -> None:
    from cloudcore.core.notifications import notify

    notify("instance.create.start", {"uuid": "a"})
    notify("scheduler.select_destinations.end", {"x": 1})
    client = login("admin", "admin", ["admin"])
    body = client.get("/notifications/?event_type=instance.").content.decode()
    assert "instance.create.start" in body
    assert "<code>scheduler.select_destinations.end</code>" not in body


def test_unknown_console_page_is_html_404() -> None:
    response = Client().get("/no-such-page/")
    assert response.status_code == 404
    assert b"Back to the console" in response.content


def test_hosts_page_shows_identity_refusals(cells: dict, settings: object) -> None:
    from pathlib import Path

    from compute.management.commands.compute import record_refusal

    record_refusal(Path(settings.STATE_PATH) / "compute9", "compute9", "My node X has host 'a' but my host is 'b'")
    client = login("admin", "admin", ["admin"])
    body = client.get("/hosts/").content.decode()
    assert "Start-up refusals" in body and "compute9" in body and "my host is" in body


def test_overview_draws_migrations_in_flight_with_progress(cells: dict) -> None:
    from tests.factories import MigrationFactory

    # given a resize moving in cell1, a live migration half copied in cell2, and a finished move
    moving = MigrationFactory(cell=cells["cell1"], status="migrating", source_compute="c1", dest_compute="c2")
    live = MigrationFactory(cell=cells["cell2"], status="migrating", migration_type="live-migration",
                            memory_total=1000, memory_processed=500)
    done = MigrationFactory(cell=cells["cell1"], status="confirmed")
    client = login("admin", "admin", ["admin"])
    # then the overview's in-flight table lists the two moving ones with their progress
    body = client.get("/", HTTP_HX_REQUEST="true", HTTP_HX_TARGET="overview-live").content.decode()
    table = body[body.index('id="moves-in-flight"'):]
    assert moving.instance_uuid[:12] in table and live.instance_uuid[:12] in table
    assert done.instance_uuid[:12] not in table
    assert 'aria-valuenow="50"' in table  # memory copied, for the live migration
    assert 'aria-valuenow="43"' in table  # step 3 of 6, for the resize
    # and while something moves the region polls every 2 s
    assert 'hx-trigger="every 2s"' in body

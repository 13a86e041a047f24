"""Servers from the console in a real browser, on the in-process test cloud (eager tasks, four
libvirt test-driver hosts in two cells): launch a server and see it ACTIVE."""
from __future__ import annotations

from typing import Any

import pytest

from tests.apihelpers import make_identity
from tests.cloud import Cloud

from .conftest import login, shot

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True, databases=["default", "cell0", "cell1", "cell2"]),
]


def test_member_launches_a_server_and_sees_it_active(page: Any, live_server: Any, live_cloud: Cloud) -> None:
    make_identity("demo", project="demo", roles=["member"], password="pw")
    login(page, live_server.url, "demo", "pw")
    # when the member launches a server from the servers page
    page.goto(live_server.url + "/servers/")
    form = page.locator("form[action='/servers/new/']")
    form.locator("input[name=name]").fill("web1")
    form.locator("select[name=flavor]").select_option(label="m1.tiny")
    if form.locator("select[name=image]").count():
        form.locator("select[name=image]").select_option(label="tiny")
    else:  # no image API to list from: the form asks for the id
        form.locator("input[name=image]").fill(live_cloud.image_id)
    form.locator("button").click()
    # then its page shows it ACTIVE on one of the hosts, with its address on demo-net
    page.wait_for_url("**/servers/*/")
    page.wait_for_function("document.querySelector('h1 .status') && "
                           "document.querySelector('h1 .status').innerText === 'ACTIVE'", timeout=20000)
    shot(page, "server-active")
    assert "web1" in page.locator("h1").inner_text()
    body = page.locator("main").inner_text()
    assert "demo-net: 10.0.0." in body
    page.goto(live_server.url + "/servers/")
    assert page.locator("tr", has_text="web1").locator(".status").inner_text() == "ACTIVE"
    shot(page, "servers-list")


def test_admin_shelves_and_unshelves_to_a_host(page: Any, live_server: Any, live_cloud: Cloud) -> None:
    from tests.apihelpers import auth_client

    admin_user, admin_project = make_identity("admin", project="admin", roles=["admin"], password="pw")
    client = auth_client(admin_user, admin_project)
    server = live_cloud.create_server(client, "shelvy", availability_zone="az2")
    login(page, live_server.url, "admin", "pw")
    page.goto(f"{live_server.url}/servers/{server['id']}/")
    assert page.locator("h1 .status").inner_text() == "ACTIVE"
    # shelve (offloaded at once with SHELVED_OFFLOAD_TIME 0)
    page.click("button[value=shelve]")
    page.wait_for_function("document.querySelector('h1 .status').innerText === 'SHELVED_OFFLOADED'")
    shot(page, "server-shelved")
    # unshelve to compute4, picked in the form
    page.locator("select[name=host]").select_option("compute4")
    page.click("button[value=unshelve]")
    page.wait_for_function("document.querySelector('h1 .status').innerText === 'ACTIVE'")
    assert "compute4" in page.locator("main").inner_text()
    shot(page, "server-unshelved")
    # the actions table tells the story
    actions = page.locator("section", has_text="Actions and events").inner_text()
    assert "unshelve" in actions and "shelve" in actions


def test_admin_migrates_and_confirms_from_the_console(page: Any, live_server: Any, live_cloud: Cloud) -> None:
    from tests.apihelpers import auth_client

    admin_user, admin_project = make_identity("admin", project="admin", roles=["admin"], password="pw")
    server = live_cloud.create_server(auth_client(admin_user, admin_project), "mover",
                                              availability_zone="az1")
    login(page, live_server.url, "admin", "pw")
    page.goto(f"{live_server.url}/servers/{server['id']}/")
    source = "compute1" if "compute1" in page.locator("main").inner_text() else "compute2"
    target = "compute2" if source == "compute1" else "compute1"
    page.locator("form", has=page.locator("button[value=migrate]")).locator("select[name=host]").select_option(target)
    page.click("button[value=migrate]")
    page.wait_for_function("document.querySelector('h1 .status').innerText === 'VERIFY_RESIZE'")
    shot(page, "server-verify-resize")
    page.click("button[value=confirm]")
    page.wait_for_function("document.querySelector('h1 .status').innerText === 'ACTIVE'")
    assert target in page.locator("main").inner_text()
    page.goto(f"{live_server.url}/migrations/")
    assert "confirmed" in page.locator("#migration-table").inner_text()
    shot(page, "migrations-confirmed")

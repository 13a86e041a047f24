"""The styled, live console on a populated test cloud (eager tasks, four libvirt test-driver hosts
in two cells), in Debian's chromium: every page carries Bootstrap and the console's stylesheet at
1280 and 390 px (photographed), capacity bars move after a boot without a reload, a server page
tells its story as a timeline, an ERROR or PENDING server explains itself and offers its way out,
and a member never sees another project's servers."""
from __future__ import annotations

from typing import Any

import pytest

from tests.apihelpers import auth_client, make_identity
from tests.cloud import Cloud

from .conftest import login, shot

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True, databases=["default", "cell0", "cell1", "cell2"]),
]

NAVY = "rgb(24, 33, 58)"  # header.top, set only by console.css
BOOTSTRAP_PRIMARY = "#0d6efd"  # --bs-primary, defined only by Bootstrap's stylesheet


def _admin(live_cloud: Cloud) -> Any:
    user, project = make_identity("admin", project="admin", roles=["admin"], password="pw")
    return auth_client(user, project)


def _styled(page: Any) -> None:
    assert page.evaluate("getComputedStyle(document.querySelector('header.top')).backgroundColor") == NAVY
    assert page.evaluate("getComputedStyle(document.body).getPropertyValue('--bs-primary').trim()") == BOOTSTRAP_PRIMARY
    # a Bootstrap component rule applied, not just its variables: cards get a border radius
    radius = page.evaluate("(() => { const c = document.querySelector('.card'); "
                           "return c ? getComputedStyle(c).borderTopLeftRadius : '6px'; })()")
    assert radius not in ("", "0px"), radius


def _used(page: Any, selector: str) -> int:
    return int(page.locator(selector).first.get_attribute("data-used"))


@pytest.mark.parametrize("page", [1280, 390], indirect=True)
def test_every_page_renders_styled_at_both_widths(page: Any, live_server: Any, live_cloud: Cloud) -> None:
    # given a cloud with a server and an admin logged in
    server = live_cloud.create_server(_admin(live_cloud), "web1", availability_zone="az1")
    width = page.viewport_size["width"]
    login(page, live_server.url, "admin", "pw")
    # then every page renders with both stylesheets, without horizontal overflow, and is photographed
    for path, name in [("/", "overview"), ("/servers/", "servers"), (f"/servers/{server['id']}/", "server"),
                       ("/hosts/", "hosts"), ("/migrations/", "migrations"), ("/policy/", "policy"),
                       ("/notifications/", "notifications")]:
        response = page.goto(live_server.url + path)
        assert response.status == 200, path
        _styled(page)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 1, (path, overflow)
        if name in ("hosts", "policy"):  # the last column (actions, the grant form) is on screen, not scrolled off
            box = page.locator("main table tbody tr td:last-child").first.bounding_box()
            assert box and box["x"] + box["width"] <= width, (path, box)
        shot(page, f"live-{name}-{width}")
    # and the overview draws capacity as bars per cell and per host, and servers by state and cell
    page.goto(live_server.url + "/")
    assert page.locator("#capacity-hosts .host-card").count() == 4
    assert page.locator("#capacity-cells [data-cell=cell1] .cap").count() == 3
    assert "ACTIVE" in page.locator("#servers-by-status").inner_text()
    assert page.locator("#servers-by-cell .dist-row").count() >= 2


def test_dark_mode_toggle_is_remembered(page: Any, live_server: Any, live_cloud: Cloud) -> None:
    make_identity("admin", project="admin", roles=["admin"], password="pw")
    login(page, live_server.url, "admin", "pw")
    light = page.evaluate("getComputedStyle(document.body).backgroundColor")
    # when the toggle is clicked
    page.locator("header [data-theme-toggle]").first.click()
    # then the page turns dark and stays dark on the next page
    assert page.evaluate("document.documentElement.getAttribute('data-bs-theme')") == "dark"
    page.goto(live_server.url + "/hosts/")
    assert page.evaluate("document.documentElement.getAttribute('data-bs-theme')") == "dark"
    dark = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert dark != light
    shot(page, "live-hosts-dark")


def test_capacity_bars_change_after_a_boot_without_a_reload(page: Any, live_server: Any, live_cloud: Cloud) -> None:
    admin = _admin(live_cloud)
    login(page, live_server.url, "admin", "pw")
    page.goto(live_server.url + "/")
    cell_vcpu = "#capacity-cells [data-cell=cell2] .cap[data-resource=VCPU]"
    assert _used(page, cell_vcpu) == 0
    page.evaluate("window.__same_page = true")
    # when a server boots in cell2 (az2) while the overview is open
    live_cloud.create_server(admin, "grower", availability_zone="az2")
    # then the bar of cell2 and of its host grow by the poll alone (the page is never reloaded)
    page.wait_for_function(f"document.querySelector('{cell_vcpu}').dataset.used === '1'", timeout=20000)
    assert page.evaluate("window.__same_page") is True
    host_bars = page.locator("#capacity-hosts .cap[data-resource=VCPU]")
    assert sorted(int(host_bars.nth(i).get_attribute("data-used")) for i in range(host_bars.count())) == [0, 0, 0, 1]
    width = page.evaluate(f"document.querySelector('{cell_vcpu} .cap-used').style.width")
    assert width not in ("0%", "0.0%", ""), width
    shot(page, "live-overview-after-boot")


def test_server_page_shows_actions_as_a_timeline(page: Any, live_server: Any, live_cloud: Cloud) -> None:
    admin = _admin(live_cloud)
    server = live_cloud.create_server(admin, "storyteller")
    live_cloud.action(admin, server["id"], {"os-stop": None})
    login(page, live_server.url, "admin", "pw")
    page.goto(f"{live_server.url}/servers/{server['id']}/")
    # then the timeline lists stop above create, each with its events, and the live region polls
    items = page.locator("#server-timeline .timeline > li")
    assert [items.nth(i).get_attribute("data-action") for i in range(items.count())] == ["stop", "create"]
    assert "compute_build_and_run_instance" in items.nth(1).inner_text()
    assert "every 10s" in page.locator("#server-live").get_attribute("hx-trigger")
    # and the console has its place on the page
    assert page.locator("#server-console [data-console-slot]").count() == 1
    shot(page, "live-server-timeline")


def _open_unschedulable(page: Any, live_server: Any, live_cloud: Cloud, name: str, status: str) -> Any:
    """Boot a server no host can take (more RAM than any host has), open its page as the admin and
    return its fault card."""
    live_cloud.flavor("m1.huge", ram=20000)
    server = live_cloud.create_server(_admin(live_cloud), name, flavor="m1.huge")
    login(page, live_server.url, "admin", "pw")
    page.goto(f"{live_server.url}/servers/{server['id']}/")
    assert page.locator("h1 .status").inner_text() == status
    return page.locator("#server-fault")


def test_error_server_explains_its_fault_and_offers_a_way_out(page: Any, live_server: Any,
                                                              live_cloud: Cloud) -> None:
    fault = _open_unschedulable(page, live_server, live_cloud, "too-big", "ERROR")
    assert "Why this server is in ERROR" in fault.inner_text()
    assert "No valid host" in fault.locator(".fault-message").inner_text()
    # it never reached a host, so a rebuild (which the API would refuse) is not offered; a reset is
    assert fault.locator("button[value=rebuild]").count() == 0
    assert "cannot be rebuilt" in fault.locator("#never-launched").inner_text()
    assert fault.locator("button[value=reset_state]").count() == 1
    assert page.locator("#server-actions button[value=rebuild]").count() == 0
    _shots_at_both_widths(page, "live-server-error")
    # when the admin resets it to error again from the fault card, the console says so
    fault.locator("select[name=state]").select_option("error")
    page.on("dialog", lambda dialog: dialog.accept())
    fault.locator("button[value=reset_state]").click()
    assert "Reset state accepted." in page.locator(".messages").inner_text()


def test_pending_server_offers_to_retry_the_build(page: Any, live_server: Any, live_cloud: Cloud,
                                                  settings: Any) -> None:
    settings.USE_PENDING_STATE = True
    fault = _open_unschedulable(page, live_server, live_cloud, "waiting", "PENDING")
    assert "Waiting for a host" in fault.inner_text()
    assert "Retry the build" in fault.locator("button[value=rebuild]").inner_text()
    # a PENDING server may only be reset to error
    assert fault.locator("select[name=state] option").all_inner_texts() == ["error"]
    _shots_at_both_widths(page, "live-server-pending")


def _shots_at_both_widths(page: Any, name: str) -> None:
    """Photograph the page at 1280 and 390 px, checking nothing overflows sideways at either."""
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 1, (name, width)
        shot(page, f"{name}-{width}")
    page.set_viewport_size({"width": 1280, "height": 900})


def test_member_retries_a_pending_build_from_its_fault_card(page: Any, live_server: Any, live_cloud: Cloud,
                                                            settings: Any) -> None:
    # given a member's server waiting for a host, locked by an admin
    settings.USE_PENDING_STATE = True
    user, project = make_identity("demo", project="demo", roles=["member"], password="pw")
    live_cloud.flavor("m1.huge", ram=20000)
    server = live_cloud.create_server(auth_client(user, project), "waiting", flavor="m1.huge")
    assert live_cloud.action(_admin(live_cloud), server["id"], {"lock": None}).status_code == 202
    login(page, live_server.url, "demo", "pw")
    page.goto(f"{live_server.url}/servers/{server['id']}/")
    page.on("dialog", lambda dialog: dialog.accept())
    # when the member clicks "Retry the build"
    page.locator("#server-fault button[value=rebuild]").click()
    # then the API's refusal is shown in its words, and the server still waits
    assert f"Rebuild refused: Instance {server['id']} is locked" in page.locator(".messages").inner_text()
    assert page.locator("h1 .status").inner_text() == "PENDING"
    _shots_at_both_widths(page, "live-server-retry-refused")
    # when the admin unlocks it, room appears, and the member clicks again
    assert live_cloud.action(_admin(live_cloud), server["id"], {"unlock": None}).status_code == 202
    live_cloud.add_host("compute9", cell="cell2", zone="az2", vcpus=16, memory_mb=65536)
    page.locator("#server-fault button[value=rebuild]").click()
    # then the build is retried and the server runs, its fault card gone
    assert "Rebuild accepted." in page.locator(".messages").inner_text()
    assert page.locator("h1 .status").inner_text() == "ACTIVE"
    assert page.locator("#server-fault").count() == 0
    shot(page, "live-server-retried")


def test_member_rebuilds_an_error_server_that_once_ran(page: Any, live_server: Any, live_cloud: Cloud) -> None:
    # given a member's server that ran and was reset to ERROR
    user, project = make_identity("demo", project="demo", roles=["member"], password="pw")
    server = live_cloud.create_server(auth_client(user, project), "fell-over")
    assert live_cloud.action(_admin(live_cloud), server["id"],
                             {"os-resetState": {"state": "error"}}).status_code == 202
    login(page, live_server.url, "demo", "pw")
    page.goto(f"{live_server.url}/servers/{server['id']}/")
    fault = page.locator("#server-fault")
    assert fault.locator("button[value=reset_state]").count() == 0  # an admin's action
    page.on("dialog", lambda dialog: dialog.accept())
    # when the member clicks Rebuild on the fault card
    fault.locator("button[value=rebuild]").click()
    # then it runs again
    assert "Rebuild accepted." in page.locator(".messages").inner_text()
    assert page.locator("h1 .status").inner_text() == "ACTIVE"


def test_member_cannot_see_another_projects_servers(page: Any, live_server: Any, live_cloud: Cloud) -> None:
    # given a server in project other and one in project demo
    other_user, other_project = make_identity("olga", project="other", roles=["member"], password="pw")
    hidden = live_cloud.create_server(auth_client(other_user, other_project), "olgas-secret")
    demo_user, demo_project = make_identity("demo", project="demo", roles=["member"], password="pw")
    demo = auth_client(demo_user, demo_project)
    live_cloud.create_server(demo, "demos-own")
    # and a key pair in each
    for client, name in ((auth_client(other_user, other_project), "olgas-key"), (demo, "demos-key")):
        assert live_cloud.post(client, "os-keypairs", {"keypair": {"name": name}}, version="2.1").status_code == 200
    # when demo's member looks at the servers page
    login(page, live_server.url, "demo", "pw")
    page.goto(live_server.url + "/servers/")
    table = page.locator("#server-table").inner_text()
    # then only demo's server is listed, and the other one's page is a 404
    assert "demos-own" in table and "olgas-secret" not in table
    response = page.goto(f"{live_server.url}/servers/{hidden['id']}/")
    assert response.status == 404
    assert "olgas-secret" not in page.content()
    shot(page, "live-member-404")
    # and the project page lists demo's own things only, every section answered by its API
    for width in (1280, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(live_server.url + "/resources/")
        _styled(page)
        assert "demos-own" in page.locator("#servers").inner_text()
        assert "demos-key" in page.locator("#keypairs").inner_text()
        assert "demo-net" in page.locator("#networks").inner_text()
        assert "default" in page.locator("#security-groups").inner_text()
        assert page.locator("#volumes").count() == 1 and page.locator("main .error").count() == 0
        assert "olgas-secret" not in page.content() and "olgas-key" not in page.content()
        shot(page, f"live-project-{width}")


def test_member_launches_with_a_key_pair_and_a_security_group(page: Any, live_server: Any, live_cloud: Cloud) -> None:
    # given a member with a key pair and a security group of their own
    user, project = make_identity("demo", project="demo", roles=["member"], password="pw")
    client = auth_client(user, project)
    assert live_cloud.post(client, "os-keypairs", {"keypair": {"name": "demos-key"}}, version="2.1").status_code == 200
    group = client.post("/network/v2.0/security-groups", {"security_group": {"name": "web"}}, format="json")
    assert group.status_code == 201, group.content
    login(page, live_server.url, "demo", "pw")
    # when they launch from the form choosing both
    page.goto(live_server.url + "/servers/")
    form = page.locator("form[action='/servers/new/']")
    form.locator("input[name=name]").fill("keyed")
    form.locator("select[name=key_name]").select_option("demos-key")
    form.locator("select[name=security_group]").select_option("web")
    form.locator("button").click()
    # then the server page shows it running with that key pair, and the API has the group on it
    page.wait_for_url("**/servers/*/")
    assert page.locator("h1 .status").inner_text() == "ACTIVE"
    assert "demos-key" in page.locator("#server-live").inner_text()
    server_id = page.url.rstrip("/").rsplit("/", 1)[1]
    shown = live_cloud.show(client, server_id)
    assert shown["key_name"] == "demos-key" and {"name": "web"} in shown["security_groups"]
    shot(page, "live-server-launched-keyed")


@pytest.mark.parametrize("page", [1280, 390], indirect=True)
def test_login_and_a_members_pages_render_styled_at_both_widths(page: Any, live_server: Any,
                                                                live_cloud: Cloud) -> None:
    # given a member with a server
    user, project = make_identity("demo", project="demo", roles=["member"], password="pw")
    server = live_cloud.create_server(auth_client(user, project), "demos-own")
    width = page.viewport_size["width"]
    # then the login page, and each page the member reaches, render styled without overflowing
    page.goto(live_server.url + "/login/")
    assert page.evaluate("getComputedStyle(document.body).getPropertyValue('--bs-primary').trim()") == BOOTSTRAP_PRIMARY
    shot(page, f"live-login-{width}")
    login(page, live_server.url, "demo", "pw")
    for path, name, status in [("/", "member-overview", 200), ("/servers/", "member-servers", 200),
                               (f"/servers/{server['id']}/", "member-server", 200),
                               ("/servers/new/", "member-launch", 200), ("/hosts/", "member-forbidden", 403),
                               ("/servers/no-such-server/", "member-not-found", 404)]:
        response = page.goto(live_server.url + path)
        assert response.status == status, path
        _styled(page)
        assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 1, (path, width)
        shot(page, f"live-{name}-{width}")

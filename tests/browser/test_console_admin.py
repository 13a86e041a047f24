"""The console in a real browser: log in, look at each admin and operator page and the launch
form, grant the cross-cell rule, and check a member is kept out of admin pages. Screenshots at
1280 and 390 px."""
from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from cloudcore.core import policy
from scheduling.services.usage_samples import placement_usage_sample_take
from tests.apihelpers import auth_client, make_identity
from tests.cloud import Cloud

from .conftest import login, shot

pytestmark = [
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True, databases=["default", "cell0", "cell1", "cell2"]),
]

CROSS_CELL = "compute:servers:resize:cross_cell"


@pytest.mark.parametrize("page", [1280, 390], indirect=True)
def test_admin_pages_render(page: Any, live_server: Any, cells: dict) -> None:
    make_identity("admin", project="admin", roles=["admin"], password="pw")
    width = page.viewport_size["width"]
    # given a cloud admin logged in
    login(page, live_server.url, "admin", "pw")
    assert page.locator("h1").first.inner_text() == "Overview"
    # then every admin page renders with its heading, and is photographed
    for path, heading in [("/", "Overview"), ("/hosts/", "Hosts"), ("/servers/", "Servers"),
                          ("/migrations/", "Migrations"), ("/policy/", "Policy"), ("/notifications/", "Notifications"),
                          ("/quotas/", "Quotas"), ("/flavors/", "Flavors"), ("/aggregates/", "Aggregates"),
                          ("/server-groups/", "Server groups")]:
        page.goto(live_server.url + path)
        assert page.locator("main h1").first.inner_text().startswith(heading)
        assert "Traceback" not in page.content()
        shot(page, f"empty-{heading.lower().replace(' ', '-')}-{width}")
    # and at 390 px nothing overflows the viewport horizontally on the overview
    page.goto(live_server.url + "/")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1


def _overflow(page: Any) -> int:
    return int(page.evaluate("document.documentElement.scrollWidth - window.innerWidth"))


def _tables_scrolling_sideways(page: Any) -> list[str]:
    """The tables whose scroll box is wider than its frame (read sideways) on this page."""
    return list(page.evaluate("""[...document.querySelectorAll('.table-responsive')]
        .filter(e => e.scrollWidth - e.clientWidth > 1)
        .map(e => (e.closest('section, .card') || e).id || e.querySelector('th')?.innerText || '?')"""))


@pytest.mark.parametrize("page", [1280, 390], indirect=True)
def test_operator_pages_and_the_launch_form_render(page: Any, live_server: Any, live_cloud: Cloud) -> None:
    admin_user, admin_project = make_identity("admin", project="admin", roles=["admin"], password="pw")
    user, project = make_identity("demo", project="demo", roles=["member"], password="pw")
    width = page.viewport_size["width"]
    # given some of everything the operator pages list, and two usage samples around a boot
    admin = auth_client(admin_user, admin_project)
    member = auth_client(user, project)
    live_cloud.post(admin, "os-aggregates", {"aggregate": {"name": "fast-ssd", "availability_zone": "az1"}})
    live_cloud.post(admin, "flavors", {"flavor": {"name": "c1.private", "vcpus": 2, "ram": 1024, "disk": 10,
                                                 "os-flavor-access:is_public": False}})
    live_cloud.post(member, "os-server-groups", {"server_group": {"name": "web", "policy": "anti-affinity"}},
                   version="2.64")
    placement_usage_sample_take(now=timezone.now() - timedelta(minutes=20))
    live_cloud.create_server(member, "web1", availability_zone="az1")
    placement_usage_sample_take(force=True)
    login(page, live_server.url, "admin", "pw")
    # then each page renders with its heading, is photographed, and nothing overflows sideways
    for path, heading, name in [("/", "Overview", "overview-usage"), ("/quotas/", "Quotas", "quotas"),
                                ("/flavors/", "Flavors", "flavors"),
                                ("/aggregates/", "Aggregates and zones", "aggregates"),
                                ("/server-groups/", "Server groups", "server-groups"),
                                ("/servers/new/", "Launch a server", "launch"),
                                ("/resources/", "Project", "project-resources")]:
        response = page.goto(live_server.url + path)
        assert response.status == 200, path
        assert page.locator("main h1").first.inner_text().startswith(heading)
        assert "Traceback" not in page.content()
        assert _overflow(page) <= 1, (path, width)
        assert _tables_scrolling_sideways(page) == [], (path, width)
        shot(page, f"{name}-{width}")
    # and the overview's usage chart has a point per sample for each resource class
    page.goto(live_server.url + "/")
    assert page.locator("#usage-chart circle.point").count() == 6
    # and the quota editor opens in its row
    page.goto(live_server.url + f"/quotas/?edit={project.id}")
    assert page.locator(f"#quota-{project.id} input[name=instances]").is_visible()
    assert _overflow(page) <= 1
    shot(page, f"quotas-edit-{width}")


def test_admin_grants_cross_cell_rule_to_a_project(page: Any, live_server: Any, cells: dict) -> None:
    make_identity("admin", project="admin", roles=["admin"], password="pw")
    _, demo = make_identity("demo-admin", project="demo", roles=["admin"], password="pw")
    login(page, live_server.url, "admin", "pw")
    page.goto(f"{live_server.url}/policy/?q={CROSS_CELL}")
    row = page.locator("tr", has=page.locator(f"code:text-is('{CROSS_CELL}')"))
    row.locator("select[name=project]").select_option(label="demo")
    row.locator("button[value=grant]").click()
    assert f"Granted {CROSS_CELL} for every member of project demo." in page.locator(".messages").inner_text()
    shot(page, "policy-granted")
    assert {"group": f"project-members:{demo.id}", "project": demo.id} in policy.grants_of(CROSS_CELL)


def test_member_is_kept_out_of_admin_pages(page: Any, live_server: Any, cells: dict) -> None:
    make_identity("demo", project="demo", roles=["member"], password="pw")
    login(page, live_server.url, "demo", "pw")
    assert "Hosts" not in page.locator("header nav").inner_text()
    response = page.goto(live_server.url + "/hosts/")
    assert response.status == 403
    response = page.goto(live_server.url + "/policy/")
    assert response.status == 403
    for path in ("/quotas/", "/flavors/", "/aggregates/", "/server-groups/"):
        assert page.goto(live_server.url + path).status == 403

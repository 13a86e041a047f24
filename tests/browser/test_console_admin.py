"""The console in a real browser: log in, look at each admin page, grant the cross-cell rule,
and check a member is kept out of admin pages. Screenshots at 1280 and 390 px."""
from __future__ import annotations

from typing import Any

import pytest

from cloudcore.core import policy
from tests.apihelpers import make_identity

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
                          ("/migrations/", "Migrations"), ("/policy/", "Policy"), ("/notifications/", "Notifications")]:
        page.goto(live_server.url + path)
        assert page.locator("main h1").first.inner_text().startswith(heading)
        assert "Traceback" not in page.content()
        shot(page, f"{heading.lower()}-{width}")
    # and at 390 px nothing overflows the viewport horizontally on the overview
    page.goto(live_server.url + "/")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1


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

"""A project manager on the console: the server page offers the migration the scheduler places
(no host to choose, that is the admin's) and lists the server's migrations without their hosts,
read through the compute API with the manager's token; a member gets neither."""
from __future__ import annotations

from typing import Any

import pytest

from tests.apihelpers import auth_client, make_identity

from .conftest import login

pytestmark = pytest.mark.django_db(transaction=True, databases=["default", "cell0", "cell1", "cell2"])


def _migrations_card(body: str) -> str:
    start = body.index("<h2>Migrations</h2>")
    return body[start:body.index("</section>", start)]


def _members_server(cloud: Any, name: str) -> tuple[Any, dict[str, Any], str]:
    """(the member's API client, its running server in az1 (cell1: compute1 and compute2), the host)."""
    user, project = make_identity("demo", project="demo", roles=["member"], password="pw")
    api = auth_client(user, project)
    server = cloud.create_server(api, name, availability_zone="az1")
    cloud.wait_for_status(api, server["id"], "ACTIVE")
    return api, server, cloud.show(cloud.admin(), server["id"])["OS-EXT-SRV-ATTR:host"]


def test_a_manager_migrates_a_server_from_the_console_and_sees_no_host(cloud: Any) -> None:
    api, server, source = _members_server(cloud, "moved")
    # the member is offered no migration and no migrations card
    member_page = login("demo", "demo", ["member"]).get(f"/servers/{server['id']}/").content.decode()
    assert 'value="migrate"' not in member_page and "<h2>Migrations</h2>" not in member_page
    # a manager of the project is offered the migration, without a host to choose
    manager = login("boss", "demo", ["manager"])
    page = manager.get(f"/servers/{server['id']}/").content.decode()
    assert 'value="migrate"' in page and 'aria-label="migrate to host"' not in page
    assert "None." in _migrations_card(page)
    # when the manager migrates it
    response = manager.post(f"/servers/{server['id']}/action/", {"op": "migrate"}, follow=True)
    assert "Migrate accepted." in response.content.decode()
    # then it waits for its resize to be confirmed on another host, and the manager's page lists the
    # migration with its hosts hidden
    cloud.wait_for_status(api, server["id"], "VERIFY_RESIZE")
    assert cloud.show(cloud.admin(), server["id"])["OS-EXT-SRV-ATTR:host"] != source
    card = _migrations_card(manager.get(f"/servers/{server['id']}/").content.decode())
    assert "<td>migration</td>" in card and "<td>—</td><td>—</td>" in card and source not in card
    # a cloud admin's page names the hosts
    admin = login("ops", "admin", ["admin"])
    assert f"<td>{source}</td>" in _migrations_card(admin.get(f"/servers/{server['id']}/").content.decode())
    # once the member confirms, the admin is offered a host to migrate to, the manager still none
    assert cloud.action(api, server["id"], {"confirmResize": None}).status_code == 204
    assert 'aria-label="migrate to host"' in admin.get(f"/servers/{server['id']}/").content.decode()
    again = manager.get(f"/servers/{server['id']}/").content.decode()
    assert 'value="migrate"' in again and 'aria-label="migrate to host"' not in again


def test_a_manager_live_migrates_from_the_console_and_an_admin_may_name_the_host(cloud: Any) -> None:
    api, server, source = _members_server(cloud, "live")
    assert 'value="live_migrate"' not in login("demo", "demo", ["member"]).get(
        f"/servers/{server['id']}/").content.decode()
    # when its manager live-migrates it from the console (no host to choose)
    manager = login("boss", "demo", ["manager"])
    page = manager.get(f"/servers/{server['id']}/").content.decode()
    assert 'value="live_migrate"' in page and 'aria-label="live migrate to host"' not in page
    response = manager.post(f"/servers/{server['id']}/action/", {"op": "live_migrate"}, follow=True)
    # then it runs on the other host of its cell
    assert "Live migrate accepted." in response.content.decode()
    moved = cloud.wait_for_status(api, server["id"], "ACTIVE")
    assert cloud.show(cloud.admin(), server["id"])["OS-EXT-SRV-ATTR:host"] not in (source, None), moved
    # and a cloud admin may name the host: back to the source
    admin = login("ops", "admin", ["admin"])
    assert 'aria-label="live migrate to host"' in admin.get(f"/servers/{server['id']}/").content.decode()
    answer = admin.post(f"/servers/{server['id']}/action/", {"op": "live_migrate", "host": source}, follow=True)
    assert "Live migrate accepted." in answer.content.decode()
    cloud.wait_for_status(api, server["id"], "ACTIVE")
    assert cloud.show(cloud.admin(), server["id"])["OS-EXT-SRV-ATTR:host"] == source

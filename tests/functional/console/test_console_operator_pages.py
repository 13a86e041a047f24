"""Operator pages (quotas, flavors, aggregates and zones, server groups) through Django's test
client: admin only, forms change what the compute API shows, refusals are the API's words."""
from __future__ import annotations

from typing import Any

import pytest

from tests.apihelpers import make_identity

from .conftest import login

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])

PAGES = ["/quotas/", "/flavors/", "/aggregates/", "/server-groups/"]


def messages_of(response: Any) -> str:
    return " ".join(str(m) for m in response.context["messages"])


@pytest.mark.parametrize("page", PAGES)
def test_member_is_refused_operator_pages(page: str, cells: dict) -> None:
    client = login("demo", "demo", ["member"])
    response = client.get(page)
    assert response.status_code == 403
    # on the console's own page, in words, with its header to go elsewhere
    body = response.content.decode()
    assert "This page needs the admin role on the admin project." in body and 'class="top' in body
    # and a write is refused before it reaches the API
    assert client.post(page + "new/" if page in ("/flavors/", "/aggregates/") else page, {}).status_code in (403, 405)


def test_member_does_not_see_the_compute_menu(cells: dict) -> None:
    body = login("demo", "demo", ["member"]).get("/").content.decode()
    assert "/quotas/" not in body and "/flavors/" not in body


@pytest.mark.parametrize("page", PAGES)
def test_admin_sees_operator_pages(page: str, cloud: Any) -> None:
    client = login("admin", "admin", ["admin"])
    response = client.get(page)
    assert response.status_code == 200
    body = response.content.decode()
    assert "Traceback" not in body and 'href="/quotas/"' in body


def test_quota_form_changes_the_projects_limit(cloud: Any) -> None:
    _, demo = make_identity("demo", project="demo", roles=["member"])
    client = login("admin", "admin", ["admin"])
    # given the quota page in edit mode for demo
    page = client.get(f"/quotas/?edit={demo.id}").content.decode()
    assert f'action="/quotas/{demo.id}/"' in page
    # when the admin sets 7 instances
    response = client.post(f"/quotas/{demo.id}/", {"instances": "7", "cores": ""}, follow=True)
    # then the API's quota set says so, and the table row shows it
    assert "Quotas of demo: done." in messages_of(response)
    assert cloud.get(cloud.admin(), f"os-quota-sets/{demo.id}").json()["quota_set"]["instances"] == 7
    row = response.content.decode().split(f'id="quota-{demo.id}"')[1].split("</tr>")[0]
    assert 'data-resource="instances"><span class="">0</span> / <span class="quota-limit">7' in row


def test_quota_form_shows_the_apis_refusal(cloud: Any) -> None:
    _, demo = make_identity("demo", project="demo", roles=["member"])
    client = login("admin", "admin", ["admin"])
    response = client.post(f"/quotas/{demo.id}/", {"instances": "lots"}, follow=True)
    assert response.status_code == 200
    assert "Quotas of demo refused: Invalid input for field/attribute quota_set/instances." in messages_of(response)
    assert "Quotas of demo refused: Invalid input" in response.content.decode()


def test_flavor_create_specs_access_and_delete(cloud: Any) -> None:
    _, demo = make_identity("demo", project="demo", roles=["member"])
    client = login("admin", "admin", ["admin"])
    admin = cloud.admin()
    # when the admin creates a private flavor
    response = client.post("/flavors/new/", {"name": "c1.private", "vcpus": "2", "ram": "512", "disk": "5",
                                             "id": "c1p", "private": "1"}, follow=True)
    assert "Create flavor c1.private: done." in messages_of(response)
    assert 'id="flavor-c1p"' in response.content.decode()
    shown = cloud.get(admin, "flavors/c1p").json()["flavor"]
    assert (shown["vcpus"], shown["ram"], shown["os-flavor-access:is_public"]) == (2, 512, False)
    # and sets an extra spec and grants demo access
    client.post("/flavors/c1p/action/", {"op": "set_spec", "key": "hw:cpu_policy", "value": "dedicated"})
    client.post("/flavors/c1p/action/", {"op": "add_access", "project": demo.id})
    body = client.get("/flavors/").content.decode()
    assert "<code>hw:cpu_policy=dedicated</code>" in body
    assert cloud.get(admin, "flavors/c1p/os-flavor-access").json()["flavor_access"] == [
        {"flavor_id": "c1p", "tenant_id": demo.id}]
    # then a delete removes it
    response = client.post("/flavors/c1p/action/", {"op": "delete"}, follow=True)
    assert "Delete on flavor c1p: done." in messages_of(response)
    assert cloud.get(admin, "flavors/c1p").status_code == 404


def test_flavor_create_shows_the_apis_validation_error(cloud: Any) -> None:
    client = login("admin", "admin", ["admin"])
    response = client.post("/flavors/new/", {"name": "bad", "vcpus": "0", "ram": "512"}, follow=True)
    assert response.status_code == 200
    text = messages_of(response)
    assert text.startswith("Create flavor bad refused: ") and "vcpus" in text


def test_aggregate_create_host_metadata_and_delete(cloud: Any) -> None:
    client = login("admin", "admin", ["admin"])
    admin = cloud.admin()
    # when the admin creates an aggregate in a new zone and adds compute1 to it
    response = client.post("/aggregates/new/", {"name": "fast", "availability_zone": "az9"}, follow=True)
    assert "Create aggregate fast: done." in messages_of(response)
    agg = next(a for a in cloud.get(admin, "os-aggregates").json()["aggregates"] if a["name"] == "fast")
    # (compute1 is in az1 already: the API refuses to put it in a second zone, in its words)
    response = client.post(f"/aggregates/{agg['id']}/action/", {"op": "add_host", "host": "compute1"}, follow=True)
    assert messages_of(response).startswith(f"Add host on aggregate {agg['id']} refused: ")
    assert "az9" in client.get("/aggregates/").content.decode()
    # so it goes into an aggregate without a zone
    client.post("/aggregates/new/", {"name": "ssd-hosts"})
    agg = next(a for a in cloud.get(admin, "os-aggregates").json()["aggregates"] if a["name"] == "ssd-hosts")
    client.post(f"/aggregates/{agg['id']}/action/", {"op": "add_host", "host": "compute1"})
    client.post(f"/aggregates/{agg['id']}/action/", {"op": "set_metadata", "key": "ssd", "value": "true"})
    # then the API and the page show the host, the metadata and the zone
    shown = cloud.get(admin, f"os-aggregates/{agg['id']}").json()["aggregate"]
    assert shown["hosts"] == ["compute1"] and shown["metadata"]["ssd"] == "true"
    body = client.get("/aggregates/").content.decode()
    assert '<span class="host">compute1</span>' in body and "<code>ssd=true</code>" in body
    # and removing the host, unsetting the key and deleting work too
    client.post(f"/aggregates/{agg['id']}/action/", {"op": "unset_metadata", "key": "ssd"})
    client.post(f"/aggregates/{agg['id']}/action/", {"op": "remove_host", "host": "compute1"})
    shown = cloud.get(admin, f"os-aggregates/{agg['id']}").json()["aggregate"]
    assert shown["hosts"] == [] and "ssd" not in shown["metadata"]
    response = client.post(f"/aggregates/{agg['id']}/action/", {"op": "delete"}, follow=True)
    assert f"Delete on aggregate {agg['id']}: done." in messages_of(response)


def test_aggregate_bad_host_shows_the_apis_refusal(cloud: Any) -> None:
    client = login("admin", "admin", ["admin"])
    client.post("/aggregates/new/", {"name": "agg1"})
    agg = next(a for a in cloud.get(cloud.admin(), "os-aggregates").json()["aggregates"] if a["name"] == "agg1")
    response = client.post(f"/aggregates/{agg['id']}/action/", {"op": "add_host", "host": "no-such-host"},
                           follow=True)
    assert response.status_code == 200
    assert "Add host on aggregate" in messages_of(response) and "no-such-host" in messages_of(response)


def test_server_groups_of_every_project_are_listed(cloud: Any) -> None:
    member = cloud.member()
    created = cloud.post(member, "os-server-groups", {"server_group": {"name": "web", "policy": "anti-affinity"}},
                         version="2.64")
    assert created.status_code == 200, created.content
    body = login("admin", "admin", ["admin"]).get("/server-groups/").content.decode()
    assert "web" in body and "<code>anti-affinity</code>" in body and "<td>demo</td>" in body


def test_admin_pre_caches_an_image_on_an_aggregates_hosts(cloud: Any) -> None:
    client = login("admin", "admin", ["admin"])
    az1 = next(a for a in cloud.get(cloud.admin(), "os-aggregates").json()["aggregates"] if a["name"] == "az1")
    # the page offers the active images for an aggregate with hosts
    body = client.get("/aggregates/").content.decode()
    row = body[body.index(f'id="aggregate-{az1["id"]}"'):]
    assert f'<option value="{cloud.image_id}">tiny</option>' in row[:row.index("</tr>")]
    # when the admin pre-caches one, the compute API takes it (202) and the conductor asks both hosts
    response = client.post(f"/aggregates/{az1['id']}/action/", {"op": "cache_images", "image": cloud.image_id},
                           follow=True)
    assert f"Cache images on aggregate {az1['id']}: done." in messages_of(response)
    progress = [n["payload"]["nova_object.data"] for n in cloud.notifications("aggregate.cache_images.progress")]
    # (these test hosts keep no image cache: each answers "unsupported", counted as failed, as Nova does)
    assert [(p["host"], p["images_failed"]) for p in progress] == [
        ("compute1", [cloud.image_id]), ("compute2", [cloud.image_id])]

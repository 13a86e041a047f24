"""Flavors API: listing filters and paging, microversion shapes, admin management, extra specs,
flavor access."""
from __future__ import annotations

import pytest

from servers.models import Flavor, FlavorProject

from .conftest import Personas

pytestmark = pytest.mark.django_db


def test_list_brief_sorted_by_flavorid_and_private_hidden(personas: Personas, flavors: list[Flavor]) -> None:
    # when a member lists flavors at 2.1
    response = personas.client("member").get("/compute/v2.1/flavors")
    # then public flavors only, sorted by flavorid, with self/bookmark links
    assert response.status_code == 200
    body = response.json()["flavors"]
    assert [f["id"] for f in body] == ["1", "2", "3"]
    assert set(body[0]) == {"id", "name", "links"}
    assert body[0]["links"] == [
        {"rel": "self", "href": "http://testserver/compute/v2.1/flavors/1"},
        {"rel": "bookmark", "href": "http://testserver/compute/flavors/1"},
    ]


def test_private_flavor_visible_with_access(personas: Personas, flavors: list[Flavor]) -> None:
    # given demo was given access to the private flavor
    FlavorProject.objects.create(flavor=flavors[3], project_id=personas.member[1].id)
    ids = [f["id"] for f in personas.client("member").get("/compute/v2.1/flavors").json()["flavors"]]
    assert "p1" in ids
    assert personas.client("member").get("/compute/v2.1/flavors/p1").status_code == 200
    # while another project still gets a 404 for it
    response = personas.client("other").get("/compute/v2.1/flavors/p1")
    assert response.status_code == 404
    assert response.json() == {"itemNotFound": {"code": 404, "message": "Flavor p1 could not be found."}}


def test_detail_shape_per_microversion(personas: Personas, flavors: list[Flavor]) -> None:
    client = personas.client("member", "2.1")
    flavor = client.get("/compute/v2.1/flavors/1").json()["flavor"]
    assert set(flavor) == {"id", "name", "ram", "disk", "vcpus", "links", "OS-FLV-EXT-DATA:ephemeral",
                           "OS-FLV-DISABLED:disabled", "os-flavor-access:is_public", "swap", "rxtx_factor"}
    assert flavor["swap"] == "" and flavor["ram"] == 512
    assert personas.client("member", "2.1").get("/compute/v2.1/flavors/3").json()["flavor"]["swap"] == 512
    f255 = personas.client("member", "2.55").get("/compute/v2.1/flavors/1").json()["flavor"]
    assert f255["description"] is None and "extra_specs" not in f255
    f261 = personas.client("member", "2.61").get("/compute/v2.1/flavors/1").json()["flavor"]
    assert f261["extra_specs"] == {}
    f275 = personas.client("member", "2.75").get("/compute/v2.1/flavors/1").json()["flavor"]
    assert f275["swap"] == 0


def test_detail_filters_and_paging(personas: Personas, flavors: list[Flavor]) -> None:
    client = personas.client("member")
    detail = client.get("/compute/v2.1/flavors/detail?minRam=2048&minDisk=20").json()["flavors"]
    assert [f["id"] for f in detail] == ["2", "3"]
    page = client.get("/compute/v2.1/flavors?limit=2").json()
    assert [f["id"] for f in page["flavors"]] == ["1", "2"]
    assert "marker=2" in page["flavors_links"][0]["href"]
    rest = client.get("/compute/v2.1/flavors?limit=2&marker=2").json()
    assert [f["id"] for f in rest["flavors"]] == ["3"] and "flavors_links" not in rest
    by_name = client.get("/compute/v2.1/flavors?sort_key=name&sort_dir=desc").json()["flavors"]
    assert [f["name"] for f in by_name] == ["m1.tiny", "m1.small", "m1.medium"]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("marker=nope", "marker [nope] not found"),
        ("minRam=abc", "Invalid minRam filter [abc]"),
        ("sort_key=bogus", "Sort key supplied is invalid: bogus"),
    ],
)
def test_bad_list_parameters_are_400(personas: Personas, flavors: list[Flavor], query: str, message: str) -> None:
    response = personas.client("member").get(f"/compute/v2.1/flavors?{query}")
    assert response.status_code == 400
    assert response.json() == {"badRequest": {"code": 400, "message": message}}


def test_unknown_query_parameter_rejected_from_275(personas: Personas, flavors: list[Flavor]) -> None:
    assert personas.client("member", "2.74").get("/compute/v2.1/flavors?foo=1").status_code == 200
    assert personas.client("member", "2.75").get("/compute/v2.1/flavors?foo=1").status_code == 400


def test_admin_lists_private_with_is_public_none(personas: Personas, flavors: list[Flavor]) -> None:
    ids = [f["id"] for f in personas.client("admin").get("/compute/v2.1/flavors?is_public=none").json()["flavors"]]
    assert ids == ["1", "2", "3", "p1"]
    only_private = personas.client("admin").get("/compute/v2.1/flavors?is_public=false").json()["flavors"]
    assert [f["id"] for f in only_private] == ["p1"]
    # a member's is_public is ignored
    member_ids = [f["id"] for f in personas.client("member").get(
        "/compute/v2.1/flavors?is_public=false").json()["flavors"]]
    assert member_ids == ["1", "2", "3"]


def test_create_update_delete_by_admin(personas: Personas, db: None) -> None:
    client = personas.client("admin", "2.55")
    body = {"flavor": {"name": "m1.custom", "ram": 1024, "vcpus": 2, "disk": 10, "id": "c1",
                       "description": "custom", "swap": 0, "os-flavor-access:is_public": False}}
    response = client.post("/compute/v2.1/flavors", body, format="json")
    assert response.status_code == 200
    created = response.json()["flavor"]
    assert created["id"] == "c1" and created["description"] == "custom"
    assert created["os-flavor-access:is_public"] is False
    # duplicates are 409 with Nova's messages
    dup = client.post("/compute/v2.1/flavors", body, format="json")
    assert dup.status_code == 409
    assert dup.json()["conflictingRequest"]["message"] == "Flavor with ID c1 already exists."
    body["flavor"]["id"] = "c2"
    assert client.post("/compute/v2.1/flavors", body, format="json").json()["conflictingRequest"]["message"] == (
        "Flavor with name m1.custom already exists.")
    # description update from 2.55
    updated = client.put("/compute/v2.1/flavors/c1", {"flavor": {"description": "new"}}, format="json")
    assert updated.status_code == 200 and updated.json()["flavor"]["description"] == "new"
    assert personas.client("admin", "2.54").put(
        "/compute/v2.1/flavors/c1", {"flavor": {"description": "x"}}, format="json").status_code == 404
    assert client.delete("/compute/v2.1/flavors/c1").status_code == 202
    assert client.delete("/compute/v2.1/flavors/c1").status_code == 404


def test_create_generates_uuid_id_and_validates(personas: Personas, db: None) -> None:
    client = personas.client("admin")
    response = client.post("/compute/v2.1/flavors", {"flavor": {"name": "x", "ram": 1, "vcpus": 1, "disk": 0}},
                           format="json")
    assert response.status_code == 200 and len(response.json()["flavor"]["id"]) == 36
    bad = client.post("/compute/v2.1/flavors", {"flavor": {"name": "y", "ram": 0, "vcpus": 1, "disk": 0}},
                      format="json")
    assert bad.status_code == 400 and "ram" in bad.json()["badRequest"]["message"]
    # the description field does not exist before 2.55
    extra = client.post("/compute/v2.1/flavors",
                        {"flavor": {"name": "z", "ram": 1, "vcpus": 1, "disk": 0, "description": "d"}}, format="json")
    assert extra.status_code == 400


def test_member_cannot_manage_flavors(personas: Personas, flavors: list[Flavor]) -> None:
    client = personas.client("member")
    response = client.post("/compute/v2.1/flavors", {"flavor": {"name": "x", "ram": 1, "vcpus": 1, "disk": 0}},
                           format="json")
    assert response.status_code == 403
    assert response.json() == {"forbidden": {
        "code": 403, "message": "Policy doesn't allow os_compute_api:os-flavor-manage:create to be performed."}}
    assert client.delete("/compute/v2.1/flavors/1").status_code == 403


def test_extra_specs_crud(personas: Personas, flavors: list[Flavor]) -> None:
    admin = personas.client("admin")
    url = "/compute/v2.1/flavors/1/os-extra_specs"
    created = admin.post(url, {"extra_specs": {"hw:cpu_policy": "dedicated", "trait:X": "required"}}, format="json")
    assert created.status_code == 200
    assert personas.client("member").get(url).json() == {
        "extra_specs": {"hw:cpu_policy": "dedicated", "trait:X": "required"}}
    assert admin.get(f"{url}/hw:cpu_policy").json() == {"hw:cpu_policy": "dedicated"}
    assert admin.put(f"{url}/hw:cpu_policy", {"hw:cpu_policy": "shared"}, format="json").json() == {
        "hw:cpu_policy": "shared"}
    mismatch = admin.put(f"{url}/hw:cpu_policy", {"other": "x"}, format="json")
    assert mismatch.status_code == 400 and mismatch.json()["badRequest"]["message"] == "Request body and URI mismatch"
    assert admin.delete(f"{url}/hw:cpu_policy").status_code == 200  # Nova's code here (202 for flavors)
    missing = admin.get(f"{url}/hw:cpu_policy")
    assert missing.status_code == 404
    assert missing.json()["itemNotFound"]["message"] == "Flavor 1 has no extra specs with key hw:cpu_policy."
    assert personas.client("member").post(url, {"extra_specs": {"a": "b"}}, format="json").status_code == 403
    # shown in the flavor body from 2.61
    assert personas.client("member", "2.61").get("/compute/v2.1/flavors/1").json()["flavor"]["extra_specs"] == {
        "trait:X": "required"}


def test_flavor_access(personas: Personas, flavors: list[Flavor]) -> None:
    admin = personas.client("admin")
    demo2 = personas.other[1].id
    added = admin.post("/compute/v2.1/flavors/p1/action", {"addTenantAccess": {"tenant": demo2}}, format="json")
    assert added.status_code == 200
    assert added.json() == {"flavor_access": [{"flavor_id": "p1", "tenant_id": demo2}]}
    again = admin.post("/compute/v2.1/flavors/p1/action", {"addTenantAccess": {"tenant": demo2}}, format="json")
    assert again.status_code == 409
    assert admin.get("/compute/v2.1/flavors/p1/os-flavor-access").json()["flavor_access"][0]["tenant_id"] == demo2
    assert personas.client("other").get("/compute/v2.1/flavors/p1").status_code == 200
    public = admin.get("/compute/v2.1/flavors/1/os-flavor-access")
    assert public.status_code == 404
    assert public.json()["itemNotFound"]["message"] == "Access list not available for public flavors."
    assert admin.post("/compute/v2.1/flavors/1/action", {"addTenantAccess": {"tenant": demo2}},
                      format="json").status_code == 409
    assert admin.post("/compute/v2.1/flavors/p1/action", {"addTenantAccess": {"tenant": "no-such"}},
                      format="json").status_code == 400
    removed = admin.post("/compute/v2.1/flavors/p1/action", {"removeTenantAccess": {"tenant": demo2}},
                         format="json")
    assert removed.status_code == 200 and removed.json() == {"flavor_access": []}
    gone = admin.post("/compute/v2.1/flavors/p1/action", {"removeTenantAccess": {"tenant": demo2}}, format="json")
    assert gone.status_code == 404
    unknown = admin.post("/compute/v2.1/flavors/p1/action", {"bogus": {}}, format="json")
    assert unknown.status_code == 400


def test_disabled_flavors_listed_for_admins_only(personas: Personas, flavors: list[Flavor]) -> None:
    Flavor.objects.filter(flavorid="2").update(disabled=True)
    assert [f["id"] for f in personas.client("member").get("/compute/v2.1/flavors").json()["flavors"]] == ["1", "3"]
    admin_ids = [f["id"] for f in personas.client("admin").get("/compute/v2.1/flavors/detail").json()["flavors"]]
    assert admin_ids == ["1", "2", "3"]


def test_2_102_name_filter_and_no_rxtx_factor_or_disabled(personas: Personas, flavors: list[Flavor]) -> None:
    # at 2.101 the flavor still carries rxtx_factor and OS-FLV-DISABLED:disabled, and name is not a filter
    old = personas.client("member", "2.101")
    assert {"rxtx_factor", "OS-FLV-DISABLED:disabled"} <= set(old.get("/compute/v2.1/flavors/1").json()["flavor"])
    assert old.get("/compute/v2.1/flavors?name=m1.small").status_code == 400
    # at 2.102 both are gone, from show and detail alike, and name filters the list
    new = personas.client("member", "2.102")
    shown = new.get("/compute/v2.1/flavors/1").json()["flavor"]
    assert not {"rxtx_factor", "OS-FLV-DISABLED:disabled"} & set(shown)
    detail = new.get("/compute/v2.1/flavors/detail").json()["flavors"]
    assert detail and not any({"rxtx_factor", "OS-FLV-DISABLED:disabled"} & set(f) for f in detail)
    assert [f["id"] for f in new.get("/compute/v2.1/flavors?name=m1.small").json()["flavors"]] == ["2"]
    assert new.get("/compute/v2.1/flavors/detail?name=nope").json()["flavors"] == []
    assert new.get("/compute/v2.1/flavors?bogus=1").status_code == 400
    # creating with rxtx_factor: accepted at 2.101, a 400 at 2.102
    body = {"flavor": {"name": "rx", "ram": 64, "vcpus": 1, "disk": 1, "rxtx_factor": 2.0}}
    admin_old, admin_new = personas.client("admin", "2.101"), personas.client("admin", "2.102")
    made = admin_old.post("/compute/v2.1/flavors", body, format="json")
    assert made.status_code == 200 and made.json()["flavor"]["rxtx_factor"] == 2.0, made.content
    body["flavor"]["name"] = "rx2"
    assert admin_new.post("/compute/v2.1/flavors", body, format="json").status_code == 400
    del body["flavor"]["rxtx_factor"]
    made = admin_new.post("/compute/v2.1/flavors", body, format="json")
    assert made.status_code == 200 and "rxtx_factor" not in made.json()["flavor"], made.content


def test_create_with_integer_id_and_string_sizes(personas: Personas, db: None) -> None:
    """Clients (Tempest, older novaclient) send the id as a JSON number and sizes as strings."""
    client = personas.client("admin")
    response = client.post("/compute/v2.1/flavors", {"flavor": {"name": "n", "ram": "512", "vcpus": "2", "disk": 1,
                                                                "id": 4242}}, format="json")
    assert response.status_code == 200, response.content
    shown = response.json()["flavor"]
    assert (shown["id"], shown["ram"], shown["vcpus"]) == ("4242", 512, 2)
    assert client.get("/compute/v2.1/flavors/4242").json()["flavor"]["name"] == "n"
    boolean = client.post("/compute/v2.1/flavors", {"flavor": {"name": "m", "ram": 1, "vcpus": 1, "disk": 0,
                                                               "id": True}}, format="json")
    assert boolean.status_code == 400

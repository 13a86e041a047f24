"""Volume types through Cinder's API: admin-only create/update/delete, extra specs (admins see
them all, others only the user-visible ones), private types seen only by their projects, type
access actions, a volume records its type, and a type in use cannot go."""
from __future__ import annotations

from typing import Any

import pytest

from tests.functional.volumes.test_volume_api import call

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])
T = "/volume/v3/types"


def _project_id(name: str) -> str:
    from identity.models import Project

    return str(Project.objects.get(name=name).id)


def _create(admin: Any, name: str, **extra: Any) -> dict[str, Any]:
    created = call(admin, "post", T, {"volume_type": {"name": name, **extra}})
    assert created.status_code == 200, created.content
    return created.json()["volume_type"]


def test_admin_creates_updates_and_deletes_a_type_and_members_may_only_read(bfv: Any) -> None:
    admin, member = bfv.admin(), bfv.member()
    # given an admin creates a public type with extra specs
    specs = {"volume_backend_name": "pool", "multiattach": "<is> True"}
    vt = _create(admin, "gold", description="fast", extra_specs=specs)
    # then Cinder's body comes back, with everything for an admin
    assert (vt["name"], vt["description"], vt["is_public"], vt["os-volume-type-access:is_public"]) == (
        "gold", "fast", True, True)
    # and, as Tempest's create schema requires, the create body has no qos_specs_id
    assert set(vt) == {"id", "name", "description", "is_public", "extra_specs", "os-volume-type-access:is_public"}
    assert vt["extra_specs"] == specs
    # and the admin's show and list carry qos_specs_id (null: no QoS specs here)
    admin_shown = call(admin, "get", f"{T}/{vt['id']}").json()["volume_type"]
    assert admin_shown["qos_specs_id"] is None and admin_shown["extra_specs"] == specs
    listed = {t["id"]: t for t in call(admin, "get", T).json()["volume_types"]}
    assert set(listed[vt["id"]]) == set(vt) | {"qos_specs_id"}
    # and a member sees it, but only the user-visible extra specs and no qos_specs_id
    shown = call(member, "get", f"{T}/{vt['id']}").json()["volume_type"]
    assert shown["extra_specs"] == {"multiattach": "<is> True"} and "qos_specs_id" not in shown
    assert "gold" in {t["name"] for t in call(member, "get", T).json()["volume_types"]}
    assert call(member, "get", f"{T}/{vt['id']}/extra_specs").json() == {"extra_specs": {"multiattach": "<is> True"}}
    # and every write of a member is refused by policy
    for method, path, body in [("post", T, {"volume_type": {"name": "mine"}}),
                               ("put", f"{T}/{vt['id']}", {"volume_type": {"name": "mine"}}),
                               ("delete", f"{T}/{vt['id']}", None),
                               ("post", f"{T}/{vt['id']}/extra_specs", {"extra_specs": {"a": "b"}}),
                               ("delete", f"{T}/{vt['id']}/extra_specs/multiattach", None)]:
        refused = call(member, method, path, body)
        assert refused.status_code == 403, (method, path, refused.content)
        assert "Policy doesn't allow" in refused.json()["forbidden"]["message"]
    # when the admin renames it, a taken name is a 409 and a bad body a 400
    updated = call(admin, "put", f"{T}/{vt['id']}", {"volume_type": {"name": "platinum", "description": "faster"}})
    assert updated.status_code == 200 and updated.json()["volume_type"]["name"] == "platinum"
    assert set(updated.json()["volume_type"]) == {"id", "name", "description", "is_public", "extra_specs"}
    _create(admin, "silver")
    assert call(admin, "put", f"{T}/{vt['id']}", {"volume_type": {"name": "silver"}}).status_code == 409
    assert call(admin, "post", T, {"volume_type": {"name": "silver"}}).json()["conflictingRequest"]["code"] == 409
    assert call(admin, "post", T, {"volume_type": {"name": "x", "colour": "red"}}).status_code == 400
    assert call(admin, "put", f"{T}/{vt['id']}", {"volume_type": {}}).status_code == 400
    # and it is deleted (202), then gone (404)
    assert call(admin, "delete", f"{T}/{vt['id']}").status_code == 202
    assert call(admin, "get", f"{T}/{vt['id']}").json()["itemNotFound"]["code"] == 404
    # and the default type cannot be deleted
    default = call(admin, "get", f"{T}/default").json()["volume_type"]
    assert default["name"] == "__DEFAULT__"
    assert call(admin, "delete", f"{T}/{default['id']}").status_code == 400


def test_extra_specs_crud(bfv: Any) -> None:
    admin = bfv.admin()
    vt = _create(admin, "specs")
    base = f"{T}/{vt['id']}/extra_specs"
    added = call(admin, "post", base, {"extra_specs": {"a": "1", "b": "2"}})
    assert added.status_code == 200 and added.json() == {"extra_specs": {"a": "1", "b": "2"}}
    assert call(admin, "get", base).json() == {"extra_specs": {"a": "1", "b": "2"}}
    assert call(admin, "get", f"{base}/a").json() == {"a": "1"}
    assert call(admin, "put", f"{base}/a", {"a": "3"}).json() == {"a": "3"}
    assert call(admin, "put", f"{base}/a", {"b": "3"}).status_code == 400
    assert call(admin, "put", f"{base}/a", {"a": "3", "b": "4"}).status_code == 400
    assert call(admin, "post", base, {"extra_specs": {"n": 1}}).status_code == 400  # values are strings
    assert call(admin, "delete", f"{base}/b").status_code == 202
    assert call(admin, "get", base).json() == {"extra_specs": {"a": "3"}}
    assert call(admin, "get", f"{base}/b").status_code == 404
    assert call(admin, "delete", f"{base}/b").status_code == 404
    assert call(admin, "get", f"{T}/nope/extra_specs").status_code == 404


def test_private_type_access(bfv: Any) -> None:
    admin, member, other = bfv.admin(), bfv.member(), bfv.member("demo2", "demo2")
    # given a private type
    vt = _create(admin, "private", **{"os-volume-type-access:is_public": False})
    assert vt["is_public"] is False
    path = f"{T}/{vt['id']}"
    # then no project sees it; an admin lists it with is_public=false (private only) or None (all)
    assert call(member, "get", path).status_code == 404
    assert "private" not in {t["name"] for t in call(member, "get", T).json()["volume_types"]}
    assert "private" in {t["name"] for t in call(admin, "get", f"{T}?is_public=false").json()["volume_types"]}
    assert "private" in {t["name"] for t in call(admin, "get", f"{T}?is_public=None").json()["volume_types"]}
    assert {t["is_public"] for t in call(admin, "get", f"{T}?is_public=false").json()["volume_types"]} == {False}
    assert call(admin, "get", f"{T}?is_public=maybe").status_code == 400
    # and a member cannot make a volume of it (404, as an unknown type)
    assert call(member, "post", "/volume/v3/volumes", {"volume": {"size": 1, "volume_type": "private"}}
                ).status_code == 404
    # when the admin gives project demo access
    demo = _project_id("demo")
    assert call(admin, "post", f"{path}/action", {"addProjectAccess": {"project": demo}}).status_code == 202
    assert call(admin, "post", f"{path}/action", {"addProjectAccess": {"project": demo}}).status_code == 409
    assert call(admin, "get", f"{path}/os-volume-type-access").json() == {
        "volume_type_access": [{"volume_type_id": vt["id"], "project_id": demo}]}
    # then demo sees it, lists it, and makes a volume of it; demo2 still does not
    assert call(member, "get", path).status_code == 200
    assert "private" in {t["name"] for t in call(member, "get", T).json()["volume_types"]}
    created = call(member, "post", "/volume/v3/volumes", {"volume": {"size": 1, "volume_type": "private"}})
    assert created.status_code == 202, created.content
    assert created.json()["volume"]["volume_type"] == "private"
    assert call(other, "get", path).status_code == 404
    # and only admins manage access; a member may not list it either
    assert call(member, "post", f"{path}/action", {"removeProjectAccess": {"project": demo}}).status_code == 403
    assert call(member, "get", f"{path}/os-volume-type-access").status_code == 403
    # when access is removed, it is gone for demo (removing twice is a 404)
    assert call(admin, "post", f"{path}/action", {"removeProjectAccess": {"project": demo}}).status_code == 202
    assert call(admin, "post", f"{path}/action", {"removeProjectAccess": {"project": demo}}).status_code == 404
    assert call(member, "get", path).status_code == 404
    # and a public type has no access list and takes no access changes
    public = _create(admin, "public")
    assert call(admin, "get", f"{T}/{public['id']}/os-volume-type-access").status_code == 404
    refused = call(admin, "post", f"{T}/{public['id']}/action", {"addProjectAccess": {"project": demo}})
    assert refused.status_code == 400 and "public volume type" in refused.json()["badRequest"]["message"]
    assert call(admin, "post", f"{path}/action", {"addProjectAccess": {}}).status_code == 400
    assert call(admin, "post", f"{path}/action", {"dance": {}}).status_code == 400


def test_a_volume_records_its_type_and_a_type_in_use_cannot_go(bfv: Any) -> None:
    admin, member = bfv.admin(), bfv.member()
    vt = _create(admin, "ssd", extra_specs={"k": "v"})
    # given a volume of the type (named by name) and one by id
    created = call(member, "post", "/volume/v3/volumes", {"volume": {"size": 1, "volume_type": "ssd"}})
    assert created.status_code == 202, created.content
    vid = created.json()["volume"]["id"]
    shown = call(member, "get", f"/volume/v3/volumes/{vid}").json()["volume"]
    assert shown["volume_type"] == "ssd" and shown["volume_type_id"] == vt["id"]
    by_id = call(member, "post", "/volume/v3/volumes", {"volume": {"size": 1, "volume_type": vt["id"]}})
    assert by_id.json()["volume"]["volume_type"] == "ssd"
    missing = call(member, "post", "/volume/v3/volumes", {"volume": {"size": 1, "volume_type": "nope"}})
    assert missing.status_code == 404 and "nope" in missing.json()["itemNotFound"]["message"]
    # when the type is deleted while in use, Cinder's 400; its extra specs cannot change either
    refused = call(admin, "delete", f"{T}/{vt['id']}")
    assert refused.status_code == 400
    assert refused.json()["badRequest"]["message"] == "Target volume type is still in use."
    assert call(admin, "post", f"{T}/{vt['id']}/extra_specs", {"extra_specs": {"a": "b"}}).status_code == 400
    # then once its volumes are gone the type can go
    for volume_id in (vid, by_id.json()["volume"]["id"]):
        assert call(member, "delete", f"/volume/v3/volumes/{volume_id}").status_code == 202
    assert call(admin, "delete", f"{T}/{vt['id']}").status_code == 202

"""Glance's metadata definitions API through HTTP (``/image/v2/metadefs``): namespaces with their
objects, property and tag definitions and resource type associations; the resource types; the
metadefs schemas; who may read and write them (admins write; everyone reads public namespaces, only
their project its private ones) and the 400s, 403s, 404s and 409s clients get."""
from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.apihelpers import admin_client, auth_client, make_identity

pytestmark = pytest.mark.django_db
NS = "/image/v2/metadefs/namespaces"
HW_PROPERTY = {"title": "Hypervisor", "type": "string", "enum": ["kvm", "qemu"], "description": "which one"}


def member(name: str = "alice", project: str = "demo") -> tuple[APIClient, str]:
    user, proj = make_identity(name, project=project, roles=["member"])
    return auth_client(user, proj), proj.id


def create_namespace(client: APIClient, name: str = "CC::Example", **body: Any) -> dict[str, Any]:
    response = client.post(NS, {"namespace": name, "visibility": "public", **body}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def fault(response: Any, code: int) -> str:
    """The message of a fault answer with status ``code``."""
    assert response.status_code == code, response.content
    (body,) = response.json().values()
    assert body["code"] == code
    return str(body["message"])


def test_a_namespace_is_created_with_its_contents_shown_listed_updated_and_deleted() -> None:
    admin = admin_client()
    # when an admin creates a protected public namespace holding an association, a property, an object and tags
    response = admin.post(NS, {
        "namespace": "CC::Compute::Hypervisor", "display_name": "Hypervisor", "description": "Which hypervisor",
        "visibility": "public", "protected": True,
        "resource_type_associations": [{"name": "OS::Glance::Image", "prefix": "hw_"}],
        "properties": {"hypervisor_type": HW_PROPERTY},
        "objects": [{"name": "CPU", "required": ["cores"], "properties": {"cores": {"title": "Cores",
                                                                                    "type": "integer",
                                                                                    "minimum": 1}}}],
        "tags": [{"name": "fast"}, {"name": "slow"}],
    }, format="json")
    # then 201 with its Location, and its attributes and contents as Glance shows them
    assert response.status_code == 201, response.content
    assert response["Location"].endswith("/image/v2/metadefs/namespaces/CC::Compute::Hypervisor")
    created = response.json()
    assert created["namespace"] == "CC::Compute::Hypervisor" and created["protected"] is True
    assert created["visibility"] == "public" and created["display_name"] == "Hypervisor"
    assert created["self"] == "/v2/metadefs/namespaces/CC::Compute::Hypervisor"
    assert created["schema"] == "/v2/schemas/metadefs/namespace"
    assert created["properties"] == {"hypervisor_type": HW_PROPERTY}
    assert [t["name"] for t in created["tags"]] == ["fast", "slow"]
    # and a show embeds the contents (the property names prefixed as a resource type names them)
    shown = admin.get(f"{NS}/CC::Compute::Hypervisor").json()
    assert shown["owner"] and shown["created_at"].endswith("Z")
    assert [(a["name"], a["prefix"]) for a in shown["resource_type_associations"]] == [("OS::Glance::Image", "hw_")]
    assert [o["name"] for o in shown["objects"]] == ["CPU"] and shown["objects"][0]["required"] == ["cores"]
    prefixed = admin.get(f"{NS}/CC::Compute::Hypervisor?resource_type=OS::Glance::Image").json()
    assert list(prefixed["properties"]) == ["hw_hypervisor_type"]
    assert prefixed["objects"][0]["required"] == ["hw_cores"]
    # and the list has it, with its associations but not its contents
    listed = admin.get(NS).json()
    (entry,) = [n for n in listed["namespaces"] if n["namespace"] == "CC::Compute::Hypervisor"]
    assert "properties" not in entry and entry["resource_type_associations"][0]["name"] == "OS::Glance::Image"
    assert listed["schema"] == "/v2/schemas/metadefs/namespaces" and listed["first"] == "/v2/metadefs/namespaces"
    # when it is deleted while protected, then 403 and it stays
    assert "protected" in fault(admin.delete(f"{NS}/CC::Compute::Hypervisor"), 403)
    # when it is updated (Glance's PUT: what the body leaves out takes its default)
    updated = admin.put(f"{NS}/CC::Compute::Hypervisor", {"namespace": "CC::Compute::Hypervisor",
                                                          "visibility": "private", "protected": False,
                                                          "description": "changed"}, format="json")
    assert updated.status_code == 200, updated.content
    body = updated.json()
    assert body["visibility"] == "private" and body["protected"] is False and body["description"] == "changed"
    assert "display_name" not in body
    # then it can be deleted, with everything in it
    assert admin.delete(f"{NS}/CC::Compute::Hypervisor").status_code == 204
    assert "CC::Compute::Hypervisor" in fault(admin.get(f"{NS}/CC::Compute::Hypervisor"), 404)
    assert admin.get(f"{NS}/CC::Compute::Hypervisor/objects").status_code == 404


def test_namespace_names_are_unique_and_a_rename_keeps_them_so() -> None:
    admin = admin_client()
    create_namespace(admin, "CC::One")
    create_namespace(admin, "CC::Two")
    assert "already exists" in fault(admin.post(NS, {"namespace": "CC::One"}, format="json"), 409)
    assert "already exists" in fault(admin.put(f"{NS}/CC::Two", {"namespace": "CC::One"}, format="json"), 409)
    renamed = admin.put(f"{NS}/CC::Two", {"namespace": "CC::Three", "visibility": "public"}, format="json")
    assert renamed.status_code == 200 and renamed.json()["self"] == "/v2/metadefs/namespaces/CC::Three"
    assert admin.get(f"{NS}/CC::Two").status_code == 404
    assert admin.get(f"{NS}/CC::Three").status_code == 200


@pytest.mark.parametrize(("body", "words"), [
    ({"visibility": "shared"}, "Invalid visibility value: shared"),
    ({"protected": "yes"}, "protected of a namespace must be a boolean"),
    ({"namespace": "x" * 81}, "at most 80 characters"),
    ({"namespace": ""}, "must be a non-empty string"),
    ({"namespace": "a/b"}, "may not contain '/'"),
    ({"description": 5}, "description of a namespace must be a string"),
    ({"colour": "blue"}, "has no attribute 'colour'"),
    ({"created_at": "2020-01-01T00:00:00Z"}, "'created_at' of a namespace is read-only"),
    ({"properties": {"p": {"title": "P"}}}, "Property p has no 'type'"),
    ({"properties": {"p": {"title": "P", "type": "text"}}}, "'type' of property p must be one of"),
    ({"objects": [{"description": "no name"}]}, "object name must be a non-empty string"),
    ({"tags": [{"name": "a"}, {"name": "a"}]}, None),
    ({"resource_type_associations": [{"name": "OS::Glance::Image", "suffix": "x"}]}, "has no attribute 'suffix'"),
])
def test_a_bad_namespace_is_refused_and_nothing_is_created(body: dict[str, Any], words: str | None) -> None:
    admin = admin_client()
    response = admin.post(NS, {"namespace": "CC::Bad", **body}, format="json")
    if words is None:  # a tag given twice: a conflict, as Glance
        assert "more than once" in fault(response, 409)
    else:
        assert words in fault(response, 400)
    assert admin.get(f"{NS}/CC::Bad").status_code == 404


def test_bodies_that_are_not_objects_are_400() -> None:
    admin = admin_client()
    assert "must be a JSON object" in fault(admin.post(NS, ["CC::List"], format="json"), 400)
    assert fault(admin.post(NS, "{not json", content_type="application/json"), 400)
    create_namespace(admin, "CC::Body")
    assert "must be a JSON object" in fault(admin.post(f"{NS}/CC::Body/objects", [], format="json"), 400)
    assert "must name its tags" in fault(admin.post(f"{NS}/CC::Body/tags", {"tags": "a"}, format="json"), 400)
    assert "are not changed by updating it" in fault(
        admin.put(f"{NS}/CC::Body", {"namespace": "CC::Body", "tags": []}, format="json"), 400)


def test_the_list_filters_sorts_and_pages() -> None:
    admin = admin_client()
    for name in ("CC::A", "CC::B", "CC::C"):
        create_namespace(admin, name)
    create_namespace(admin, "CC::Private", visibility="private")
    assert admin.post(f"{NS}/CC::B/resource_types", {"name": "OS::Nova::Flavor"}, format="json").status_code == 201
    names = [n["namespace"] for n in admin.get(f"{NS}?sort_key=namespace&sort_dir=asc").json()["namespaces"]]
    assert names == ["CC::A", "CC::B", "CC::C", "CC::Private"]
    private = admin.get(f"{NS}?visibility=private").json()["namespaces"]
    assert [n["namespace"] for n in private] == ["CC::Private"]
    flavors = admin.get(f"{NS}?resource_types=OS::Nova::Flavor,OS::Nova::Aggregate").json()["namespaces"]
    assert [n["namespace"] for n in flavors] == ["CC::B"]
    # a full page links to the next one, which starts after its marker
    first = admin.get(f"{NS}?sort_key=namespace&sort_dir=asc&limit=2").json()
    assert [n["namespace"] for n in first["namespaces"]] == ["CC::A", "CC::B"]
    assert "marker=CC%3A%3AB" in first["next"] and "sort_key=namespace" in first["next"]
    second = admin.get(f"/image{first['next']}").json()
    assert [n["namespace"] for n in second["namespaces"]] == ["CC::C", "CC::Private"]
    assert "CC::Nowhere" in fault(admin.get(f"{NS}?marker=CC::Nowhere"), 404)
    assert "Invalid sort key" in fault(admin.get(f"{NS}?sort_key=colour"), 400)
    assert "Invalid sort direction" in fault(admin.get(f"{NS}?sort_dir=up"), 400)
    assert "Invalid visibility" in fault(admin.get(f"{NS}?visibility=shared"), 400)
    assert "limit param must be" in fault(admin.get(f"{NS}?limit=x"), 400)


def test_objects_are_created_listed_shown_replaced_and_deleted() -> None:
    admin = admin_client()
    create_namespace(admin, "CC::Objects")
    url = f"{NS}/CC::Objects/objects"
    response = admin.post(url, {"name": "Memory", "description": "RAM", "required": ["size"],
                                "properties": {"size": {"title": "Size", "type": "integer", "minimum": 1}}},
                          format="json")
    assert response.status_code == 201, response.content
    created = response.json()
    assert created["self"] == "/v2/metadefs/namespaces/CC::Objects/objects/Memory"
    assert created["schema"] == "/v2/schemas/metadefs/object" and created["required"] == ["size"]
    assert admin.post(url, {"name": "Disk"}, format="json").status_code == 201
    assert "already exists" in fault(admin.post(url, {"name": "Memory"}, format="json"), 409)
    listed = admin.get(url).json()
    assert sorted(o["name"] for o in listed["objects"]) == ["Disk", "Memory"]
    assert listed["schema"] == "/v2/schemas/metadefs/objects"
    assert admin.get(f"{url}/Memory").json()["properties"]["size"]["minimum"] == 1
    # a PUT replaces the object: what it leaves out is emptied; a new name renames it
    replaced = admin.put(f"{url}/Memory", {"name": "RAM"}, format="json")
    assert replaced.status_code == 200, replaced.content
    assert replaced.json()["name"] == "RAM" and replaced.json()["required"] == []
    assert "description" not in replaced.json()
    assert "already exists" in fault(admin.put(f"{url}/RAM", {"name": "Disk"}, format="json"), 409)
    assert "Memory" in fault(admin.get(f"{url}/Memory"), 404)
    assert "'minimum' of property size must be a number" in fault(
        admin.put(f"{url}/RAM", {"name": "RAM", "properties": {"size": {"title": "S", "type": "integer",
                                                                          "minimum": "1"}}}, format="json"), 400)
    assert admin.delete(f"{url}/RAM").status_code == 204
    assert admin.delete(f"{url}/RAM").status_code == 404
    # deleting all of them
    assert admin.delete(url).status_code == 204
    assert admin.get(url).json()["objects"] == []


def test_properties_are_created_shown_replaced_and_deleted() -> None:
    admin = admin_client()
    create_namespace(admin, "CC::Props", resource_type_associations=[{"name": "OS::Nova::Flavor",
                                                                       "prefix": "hw:"}])
    url = f"{NS}/CC::Props/properties"
    # a property named like a resource type (colons in the URL), as Tempest's test names it
    response = admin.post(url, {"name": "OS::Glance::Image", **HW_PROPERTY}, format="json")
    assert response.status_code == 201, response.content
    assert response.json() == {"name": "OS::Glance::Image", **HW_PROPERTY}
    assert "already exists" in fault(admin.post(url, {"name": "OS::Glance::Image", **HW_PROPERTY},
                                                format="json"), 409)
    assert admin.get(f"{url}/OS::Glance::Image").json()["title"] == "Hypervisor"
    assert admin.get(url).json() == {"properties": {"OS::Glance::Image": HW_PROPERTY}}
    # the name a resource type gives it (its association's prefix) finds it too
    assert admin.post(url, {"name": "cpu_cores", "title": "Cores", "type": "integer"},
                      format="json").status_code == 201
    by_flavor = admin.get(f"{url}/hw:cpu_cores?resource_type=OS::Nova::Flavor")
    assert by_flavor.status_code == 200 and by_flavor.json()["name"] == "hw:cpu_cores"
    assert admin.get(f"{url}/cpu_cores?resource_type=OS::Nova::Flavor").status_code == 404
    # a PUT replaces the definition
    replaced = admin.put(f"{url}/OS::Glance::Image", {"name": "OS::Glance::Image", "title": "Changed",
                                                      "type": "string"}, format="json")
    assert replaced.status_code == 200 and replaced.json() == {"name": "OS::Glance::Image", "title": "Changed",
                                                               "type": "string"}
    assert admin.delete(f"{url}/OS::Glance::Image").status_code == 204
    assert admin.get(f"{url}/OS::Glance::Image").status_code == 404
    assert admin.delete(url).status_code == 204
    assert admin.get(url).json() == {"properties": {}}


@pytest.mark.parametrize(("definition", "words"), [
    ({"type": "string"}, "has no 'title'"),
    ({"title": "T"}, "has no 'type'"),
    ({"title": "T", "type": "string", "colour": "red"}, "has no attribute 'colour'"),
    ({"title": "T", "type": "integer", "minimum": 5, "maximum": 1}, "'minimum' of property p is greater"),
    ({"title": "T", "type": "string", "pattern": "("}, "'pattern' of property p must be a regular expression"),
    ({"title": "T", "type": "string", "maxLength": -1}, "'maxLength' of property p must be a non-negative"),
    ({"title": "T", "type": "array", "items": {"type": "blob"}}, "'items' of property p must be"),
    ({"title": "T", "type": "string", "operators": "<or>"}, "'operators' of property p must be an array"),
    ({"title": "T", "type": "boolean", "readonly": "no"}, "'readonly' of property p must be a boolean"),
])
def test_a_bad_property_definition_is_400(definition: dict[str, Any], words: str) -> None:
    admin = admin_client()
    create_namespace(admin, "CC::BadProps")
    response = admin.post(f"{NS}/CC::BadProps/properties", {"name": "p", **definition}, format="json")
    assert words in fault(response, 400)
    assert admin.get(f"{NS}/CC::BadProps/properties").json() == {"properties": {}}


def test_tags_are_replaced_appended_renamed_and_deleted() -> None:
    admin = admin_client()
    create_namespace(admin, "CC::Tags")
    url = f"{NS}/CC::Tags/tags"
    # several at once: 201 with their names
    response = admin.post(url, {"tags": [{"name": "a"}, {"name": "b"}]}, format="json")
    assert response.status_code == 201 and response.json() == {"tags": [{"name": "a"}, {"name": "b"}]}
    # a second POST replaces them, unless appending
    admin.post(url, {"tags": [{"name": "c"}]}, format="json")
    assert [t["name"] for t in admin.get(url).json()["tags"]] == ["c"]
    appended = admin.post(url, {"tags": [{"name": "d"}]}, format="json", HTTP_X_OPENSTACK_APPEND="True")
    assert appended.status_code == 201
    assert sorted(t["name"] for t in admin.get(url).json()["tags"]) == ["c", "d"]
    assert "already exists" in fault(admin.post(url, {"tags": [{"name": "d"}]}, format="json",
                                                HTTP_X_OPENSTACK_APPEND="true"), 409)
    assert "more than once" in fault(admin.post(url, {"tags": [{"name": "e"}, {"name": "e"}]}, format="json"), 409)
    assert sorted(t["name"] for t in admin.get(url).json()["tags"]) == ["c", "d"]  # all or none
    # one by the URL: 201, then 409
    single = admin.post(f"{url}/e")
    assert single.status_code == 201 and single.json()["name"] == "e" and single.json()["created_at"]
    assert "already exists" in fault(admin.post(f"{url}/e"), 409)
    assert "may not name another" in fault(admin.post(f"{url}/g", {"name": "h"}, format="json"), 400)
    assert "has no attribute 'colour'" in fault(admin.post(f"{url}/g", {"colour": "red"}, format="json"), 400)
    assert admin.post(f"{url}/g", {"name": "g"}, format="json").status_code == 201
    assert admin.delete(f"{url}/g").status_code == 204
    assert admin.get(f"{url}/e").json()["name"] == "e"
    renamed = admin.put(f"{url}/e", {"name": "f"}, format="json")
    assert renamed.status_code == 200 and renamed.json()["name"] == "f"
    assert "already exists" in fault(admin.put(f"{url}/f", {"name": "c"}, format="json"), 409)
    assert admin.get(f"{url}/e").status_code == 404
    page = admin.get(f"{url}?sort_key=name&sort_dir=asc&marker=c&limit=1").json()["tags"]
    assert [t["name"] for t in page] == ["d"]
    assert admin.delete(f"{url}/f").status_code == 204
    assert admin.delete(f"{url}/f").status_code == 404
    assert admin.delete(url).status_code == 204
    assert admin.get(url).json() == {"tags": []}


def test_resource_types_and_associations() -> None:
    admin = admin_client()
    types = admin.get("/image/v2/metadefs/resource_types").json()["resource_types"]
    assert {"OS::Glance::Image", "OS::Cinder::Volume", "OS::Nova::Flavor"} <= {t["name"] for t in types}
    assert all(t["created_at"] for t in types)
    create_namespace(admin, "CC::Assoc")
    url = f"{NS}/CC::Assoc/resource_types"
    response = admin.post(url, {"name": "OS::Cinder::Volume", "prefix": "vol_", "properties_target": "image"},
                          format="json")
    assert response.status_code == 201, response.content
    assert response.json()["name"] == "OS::Cinder::Volume" and response.json()["properties_target"] == "image"
    assert "already associated" in fault(admin.post(url, {"name": "OS::Cinder::Volume"}, format="json"), 409)
    # an unknown resource type is made by its first association, as Glance does
    assert admin.post(url, {"name": "CC::Widget"}, format="json").status_code == 201
    assert "CC::Widget" in {t["name"] for t in admin.get("/image/v2/metadefs/resource_types").json()["resource_types"]}
    listed = admin.get(url).json()["resource_type_associations"]
    assert [a["name"] for a in listed] == ["OS::Cinder::Volume", "CC::Widget"] and "prefix" not in listed[1]
    assert admin.delete(f"{url}/OS::Cinder::Volume").status_code == 204
    assert "OS::Cinder::Volume" in fault(admin.delete(f"{url}/OS::Cinder::Volume"), 404)
    assert [a["name"] for a in admin.get(url).json()["resource_type_associations"]] == ["CC::Widget"]
    assert "resource type name" in fault(admin.post(url, {"prefix": "x"}, format="json"), 400)


def test_a_protected_namespace_refuses_every_delete_until_unprotected() -> None:
    admin = admin_client()
    create_namespace(admin, "CC::Kept", protected=True, properties={"p": HW_PROPERTY}, objects=[{"name": "o"}],
                     tags=[{"name": "t"}], resource_type_associations=[{"name": "OS::Nova::Server"}])
    base = f"{NS}/CC::Kept"
    for path in ("/objects/o", "/properties/p", "/tags/t", "/resource_types/OS::Nova::Server", "/objects",
                 "/properties", "/tags", ""):
        assert "protected" in fault(admin.delete(f"{base}{path}"), 403), path
    shown = admin.get(base).json()
    assert shown["objects"] and shown["properties"] and shown["tags"] and shown["resource_type_associations"]
    # while creating and changing in it is allowed
    assert admin.post(f"{base}/tags/u").status_code == 201
    admin.put(base, {"namespace": "CC::Kept", "visibility": "public", "protected": False}, format="json")
    assert admin.delete(f"{base}/objects/o").status_code == 204
    assert admin.delete(base).status_code == 204


def test_members_read_public_and_their_own_namespaces_and_write_none() -> None:
    admin = admin_client()
    alice, demo_id = member("alice", "demo")
    bob, _ = member("bob", "demo2")
    create_namespace(admin, "CC::Public", objects=[{"name": "o"}], tags=[{"name": "t"}])
    create_namespace(admin, "CC::DemoOnly", visibility="private", owner=demo_id, properties={"p": HW_PROPERTY})
    create_namespace(admin, "CC::AdminOnly", visibility="private")
    # reading: public namespaces for everyone, a private one for its owner's project only (404 for others)
    assert alice.get(f"{NS}/CC::Public").status_code == 200
    assert alice.get(f"{NS}/CC::Public/objects/o").status_code == 200
    assert alice.get(f"{NS}/CC::DemoOnly/properties/p").json()["title"] == "Hypervisor"
    assert "CC::DemoOnly" in fault(bob.get(f"{NS}/CC::DemoOnly"), 404)
    assert bob.get(f"{NS}/CC::DemoOnly/properties").status_code == 404
    assert alice.get(f"{NS}/CC::AdminOnly").status_code == 404
    assert sorted(n["namespace"] for n in alice.get(NS).json()["namespaces"]) == ["CC::DemoOnly", "CC::Public"]
    assert [n["namespace"] for n in bob.get(NS).json()["namespaces"]] == ["CC::Public"]
    assert alice.get("/image/v2/metadefs/resource_types").status_code == 200
    # writing: 403 naming Glance's rule where the member reads the namespace, 404 where it does not
    refused = alice.post(NS, {"namespace": "CC::Mine"}, format="json")
    assert "not authorized to complete add_metadef_namespace action" in fault(refused, 403)
    for method, path, rule in [
        ("put", "", "modify_metadef_namespace"), ("delete", "", "delete_metadef_namespace"),
        ("post", "/objects", "add_metadef_object"), ("put", "/objects/o", "modify_metadef_object"),
        ("delete", "/objects/o", "delete_metadef_object"), ("post", "/properties", "add_metadef_property"),
        ("post", "/tags", "add_metadef_tags"), ("post", "/tags/x", "add_metadef_tag"),
        ("delete", "/tags/t", "delete_metadef_tag"), ("delete", "/objects", "delete_metadef_namespace"),
        ("post", "/resource_types", "add_metadef_resource_type_association"),
    ]:
        response = getattr(alice, method)(f"{NS}/CC::Public{path}", {"namespace": "CC::Public", "name": "n"},
                                          format="json")
        assert f"complete {rule} action" in fault(response, 403), (method, path)
    assert bob.put(f"{NS}/CC::DemoOnly", {"namespace": "CC::DemoOnly"}, format="json").status_code == 404
    assert admin.get(f"{NS}/CC::Public").json()["objects"][0]["name"] == "o"  # nothing changed
    assert len(admin.get(NS).json()["namespaces"]) == 3


def test_a_reader_reads_and_the_read_policy_knows_public_namespaces() -> None:
    user, project = make_identity("rita", project="demo", roles=["reader"])
    reader = auth_client(user, project)
    create_namespace(admin_client(), "CC::ForReaders")
    assert reader.get(f"{NS}/CC::ForReaders").status_code == 200
    assert "add_metadef_tag" in fault(reader.post(f"{NS}/CC::ForReaders/tags/x"), 403)


@pytest.mark.parametrize(("kind", "name"), [
    ("namespace", "namespace"), ("namespaces", "namespaces"), ("object", "object"), ("objects", "objects"),
    ("property", "property"), ("properties", "properties"), ("tag", "tag"), ("tags", "tags"),
    ("resource_type", "resource_type_association"), ("resource_types", "resource_type_associations"),
])
def test_the_metadefs_schemas(kind: str, name: str) -> None:
    client, _ = member()
    response = client.get(f"/image/v2/schemas/metadefs/{kind}")
    assert response.status_code == 200, response.content
    schema = response.json()
    assert schema["name"] == name and schema["properties"]
    assert client.get("/image/v2/schemas/metadefs/widget").status_code == 404

"""Keystone's project tags: in the project body (create, update), the tag API of a project
(list, replace, add, check, remove, clear), the list filters tags / tags-any / not-tags /
not-tags-any, Keystone's limits and 400s, and who may read and change them."""
from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.django_db


def _project(admin: Any, name: str, tags: list[str] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name}
    if tags is not None:
        body["tags"] = tags
    created = admin.post("/identity/v3/projects", {"project": body}, format="json")
    assert created.status_code == 201, created.content
    project: dict[str, Any] = created.json()["project"]
    return project


def test_tags_in_the_project_body(admin: Any) -> None:
    # given a project created with tags
    project = _project(admin, "tagged", ["blue", "prod"])
    assert project["tags"] == ["blue", "prod"]
    assert admin.get(f"/identity/v3/projects/{project['id']}").json()["project"]["tags"] == ["blue", "prod"]
    # when an update sends tags, they replace the old ones; an update without tags keeps them
    patched = admin.patch(f"/identity/v3/projects/{project['id']}", {"project": {"tags": ["green"]}}, format="json")
    assert patched.status_code == 200
    assert patched.json()["project"]["tags"] == ["green"]
    kept = admin.patch(f"/identity/v3/projects/{project['id']}", {"project": {"description": "x"}}, format="json")
    assert kept.json()["project"]["tags"] == ["green"]
    # then a project without tags has an empty list
    assert _project(admin, "plain")["tags"] == []


def test_tag_api(admin: Any) -> None:
    project = _project(admin, "p")
    tags_url = f"/identity/v3/projects/{project['id']}/tags"
    # add one
    added = admin.put(f"{tags_url}/blue")
    assert added.status_code == 201
    assert added["Location"] == f"http://testserver{tags_url}/blue"
    assert admin.get(f"{tags_url}/blue").status_code == 204
    assert admin.head(f"{tags_url}/blue").status_code == 204
    missing = admin.get(f"{tags_url}/red")
    assert missing.status_code == 404
    assert missing.json() == {"error": {"code": 404, "message": "Could not find project tag: red.",
                                        "title": "Not Found"}}
    # replace all
    replaced = admin.put(tags_url, {"tags": ["a", "b", "c"]}, format="json")
    assert replaced.status_code == 200
    assert replaced.json() == {"tags": ["a", "b", "c"], "links": {"self": f"http://testserver{tags_url}"}}
    assert admin.get(tags_url).json()["tags"] == ["a", "b", "c"]
    assert admin.get(f"{tags_url}/blue").status_code == 404
    # remove one, then all
    assert admin.delete(f"{tags_url}/a").status_code == 204
    assert admin.delete(f"{tags_url}/a").status_code == 404
    assert admin.get(tags_url).json()["tags"] == ["b", "c"]
    assert admin.delete(tags_url).status_code == 204
    assert admin.get(tags_url).json()["tags"] == []
    # an unknown project
    assert admin.get("/identity/v3/projects/nope/tags").json()["error"]["message"] == "Could not find project: nope."
    assert admin.put("/identity/v3/projects/nope/tags/x").status_code == 404


@pytest.mark.parametrize("tags", [
    ["a/b"], ["a,b"], [""], ["x" * 256], ["same", "same"], [f"t{i}" for i in range(81)], [1],
])
def test_keystone_limits_are_400(admin: Any, tags: list[Any]) -> None:
    project = _project(admin, "p")
    for response in (
        admin.post("/identity/v3/projects", {"project": {"name": "other", "tags": tags}}, format="json"),
        admin.patch(f"/identity/v3/projects/{project['id']}", {"project": {"tags": tags}}, format="json"),
        admin.put(f"/identity/v3/projects/{project['id']}/tags", {"tags": tags}, format="json"),
    ):
        assert response.status_code == 400, response.content
        assert response.json()["error"]["code"] == 400
    # nothing was stored
    assert admin.get(f"/identity/v3/projects/{project['id']}/tags").json()["tags"] == []
    assert admin.get("/identity/v3/projects?name=other").json()["projects"] == []


def test_adding_a_tag_within_the_limits(admin: Any) -> None:
    project = _project(admin, "p", [f"t{i}" for i in range(80)])
    url = f"/identity/v3/projects/{project['id']}/tags"
    assert admin.put(f"{url}/t81").status_code == 400  # an 81st
    assert admin.put(f"{url}/t1").status_code == 400  # one it has
    assert admin.put(f"{url}/a,b").status_code == 400
    assert admin.put(f"{url}/{'x' * 256}").status_code == 400
    assert admin.put(url, {"tags": "t1"}, format="json").status_code == 400
    assert admin.put(url, {}, format="json").status_code == 400
    assert len(admin.get(url).json()["tags"]) == 80


def test_list_filters(admin: Any) -> None:
    ab = _project(admin, "ab", ["a", "b"])["id"]
    a = _project(admin, "a", ["a"])["id"]
    c = _project(admin, "c", ["c"])["id"]

    def listed(query: str) -> set[str]:
        response = admin.get(f"/identity/v3/projects?{query}")
        assert response.status_code == 200
        return {p["id"] for p in response.json()["projects"]} & {ab, a, c}

    assert listed("tags=a,b") == {ab}
    assert listed("tags=a") == {ab, a}
    assert listed("tags-any=b,c") == {ab, c}
    assert listed("not-tags=a,b") == {a, c}
    assert listed("not-tags-any=a") == {c}
    assert listed("tags=a&not-tags-any=b") == {a}
    assert listed("tags=nothing") == set()


def test_policy(admin: Any, member: Any, people: dict[str, Any]) -> None:
    demo = people["demo_project"].id
    admin.put(f"/identity/v3/projects/{demo}/tags", {"tags": ["x"]}, format="json")
    # a member reads the tags of their own project
    assert member.get(f"/identity/v3/projects/{demo}/tags").json()["tags"] == ["x"]
    assert member.get(f"/identity/v3/projects/{demo}/tags/x").status_code == 204
    # and changes none (Keystone's defaults: admins only)
    for response in (
        member.put(f"/identity/v3/projects/{demo}/tags/y"),
        member.put(f"/identity/v3/projects/{demo}/tags", {"tags": []}, format="json"),
        member.delete(f"/identity/v3/projects/{demo}/tags/x"),
        member.delete(f"/identity/v3/projects/{demo}/tags"),
        member.patch(f"/identity/v3/projects/{demo}", {"project": {"tags": []}}, format="json"),
    ):
        assert response.status_code == 403
        assert response.json()["error"]["title"] == "Forbidden"
    # nor reads another project's
    other = people["admin_project"].id
    assert member.get(f"/identity/v3/projects/{other}/tags").status_code == 403
    assert admin.get(f"/identity/v3/projects/{demo}/tags").json()["tags"] == ["x"]

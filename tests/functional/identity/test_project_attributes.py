"""Keystone's project attributes beyond name, description, enabled and tags, on create
(``POST /v3/projects``) and update (``PATCH /v3/projects/{id}``): each one a client sends is
either kept and given back or refused with Keystone's error body, never dropped.

``is_domain`` and ``parent_id``: this cloud has one domain and no project hierarchy, so false and
the domain's id are accepted (what every project is) and anything else refused, nothing stored."""
from __future__ import annotations

from typing import Any

import pytest

from identity.models import Project

pytestmark = pytest.mark.django_db

PROJECTS = "/identity/v3/projects"


def _create(admin: Any, **attributes: Any) -> Any:
    return admin.post(PROJECTS, {"project": {"name": "p1", **attributes}}, format="json")


def _patch(admin: Any, project_id: str, **attributes: Any) -> Any:
    return admin.patch(f"{PROJECTS}/{project_id}", {"project": attributes}, format="json")


def _error(response: Any, code: int) -> str:
    assert response.status_code == code, response.content
    error = response.json()["error"]
    assert error["code"] == code
    assert error["title"] == {400: "Bad Request", 403: "Forbidden", 404: "Not Found"}[code]
    message: str = error["message"]
    return message


def test_is_domain_false_is_every_project(admin: Any) -> None:
    # given a project created with is_domain false
    created = _create(admin, is_domain=False)
    assert created.status_code == 201, created.content
    project = created.json()["project"]
    assert project["is_domain"] is False
    # when an update sends is_domain false, it is accepted and changes nothing
    patched = _patch(admin, project["id"], is_domain=False, description="d")
    assert patched.status_code == 200, patched.content
    assert patched.json()["project"]["is_domain"] is False
    assert patched.json()["project"]["description"] == "d"
    # then the project reads the same
    assert admin.get(f"{PROJECTS}/{project['id']}").json()["project"]["is_domain"] is False


def test_is_domain_true_is_refused(admin: Any) -> None:
    # when a project acting as a domain is asked for
    message = _error(_create(admin, is_domain=True), 400)
    # then it is refused, naming the field, and nothing is stored
    assert "'is_domain'" in message and "only the Default domain" in message
    assert not Project.objects.filter(name="p1").exists()
    # and an update cannot make a project one
    project = _create(admin).json()["project"]
    message = _error(_patch(admin, project["id"], is_domain=True, description="changed"), 400)
    assert "'is_domain'" in message and "cannot be changed" in message
    stored = Project.objects.get(id=project["id"])
    assert stored.is_domain is False and stored.description == ""
    # and a non-boolean is the schema's 400
    _error(_create(admin, is_domain="yes"), 400)


@pytest.mark.parametrize("parent_id", [None, "", "default"])
def test_parent_id_of_the_domain_is_accepted(admin: Any, parent_id: str | None) -> None:
    # given a project created with its domain as parent (or none: the domain, as Keystone)
    created = _create(admin, parent_id=parent_id)
    assert created.status_code == 201, created.content
    project = created.json()["project"]
    # then its parent is the domain
    assert project["parent_id"] == "default"
    assert admin.get(f"{PROJECTS}/{project['id']}").json()["project"]["parent_id"] == "default"
    # and an update naming the same parent is accepted
    patched = _patch(admin, project["id"], parent_id="default", name="p2")
    assert patched.status_code == 200, patched.content
    assert patched.json()["project"]["parent_id"] == "default"
    assert patched.json()["project"]["name"] == "p2"


def test_parent_id_of_a_project_is_refused(admin: Any) -> None:
    # given a project
    parent = _create(admin).json()["project"]
    # when another one is created under it
    response = admin.post(PROJECTS, {"project": {"name": "child", "parent_id": parent["id"]}}, format="json")
    # then it is refused (no hierarchy here) and nothing is stored
    message = _error(response, 400)
    assert "'parent_id'" in message and "hierarchical projects are not supported" in message
    assert parent["id"] in message
    assert not Project.objects.filter(name="child").exists()


def test_parent_id_unknown_is_not_found(admin: Any) -> None:
    # when the parent named is no project, Keystone's answer: 404
    message = _error(_create(admin, parent_id="no-such-project"), 404)
    assert message == "Could not find project: no-such-project."
    assert not Project.objects.filter(name="p1").exists()


def test_parent_id_cannot_change(admin: Any) -> None:
    # given two projects
    project = _create(admin).json()["project"]
    other = admin.post(PROJECTS, {"project": {"name": "other"}}, format="json").json()["project"]
    # when an update names another parent (or none), it is Keystone's 403 and nothing changes
    for parent_id in (other["id"], None):
        message = _error(_patch(admin, project["id"], parent_id=parent_id, name="renamed"), 403)
        assert message == "A project's parent_id cannot be changed (it is default)."
    assert Project.objects.get(id=project["id"]).name == "p1"


def test_domain_id_cannot_change(admin: Any) -> None:
    # given a project of the Default domain
    project = _create(admin, domain_id="default").json()["project"]
    # when an update names its own domain, it is accepted
    patched = _patch(admin, project["id"], domain_id="default", description="same domain")
    assert patched.status_code == 200, patched.content
    assert patched.json()["project"]["domain_id"] == "default"
    # when it names another, it is refused (it was ignored) and nothing changes
    for domain_id in ("other", None):
        message = _error(_patch(admin, project["id"], domain_id=domain_id, description="moved"), 400)
        assert "'domain_id'" in message and "cannot move" in message
    assert Project.objects.get(id=project["id"]).description == "same domain"


def test_extra_attributes_are_kept(admin: Any) -> None:
    # given a project created with attributes that have no column (the CLI's --property k=v)
    created = _create(admin, colour="blue", size={"vcpus": 4}, owner=None)
    assert created.status_code == 201, created.content
    project = created.json()["project"]
    # then they are given back, on create, show and list
    assert (project["colour"], project["size"], project["owner"]) == ("blue", {"vcpus": 4}, None)
    shown = admin.get(f"{PROJECTS}/{project['id']}").json()["project"]
    assert (shown["colour"], shown["size"], shown["owner"]) == ("blue", {"vcpus": 4}, None)
    listed = [p for p in admin.get(PROJECTS).json()["projects"] if p["id"] == project["id"]]
    assert listed[0]["colour"] == "blue"
    # when an update sends some, they are set over the others (Keystone's merge)
    patched = _patch(admin, project["id"], colour="green", team="ops")
    assert patched.status_code == 200, patched.content
    body = patched.json()["project"]
    assert (body["colour"], body["team"], body["size"]) == ("green", "ops", {"vcpus": 4})
    assert Project.objects.get(id=project["id"]).extra == {"colour": "green", "size": {"vcpus": 4}, "owner": None,
                                                           "team": "ops"}


def test_id_and_links_are_the_clouds(admin: Any) -> None:
    # when a create names the project's id or links, it is refused (it would be replaced)
    assert "'id'" in _error(_create(admin, id="mine"), 400)
    assert "'links'" in _error(_create(admin, links={"self": "x"}), 400)
    assert not Project.objects.filter(name="p1").exists()
    # and an update naming another id is refused; its own id is accepted
    project = _create(admin).json()["project"]
    _error(_patch(admin, project["id"], id="other", name="renamed"), 400)
    _error(_patch(admin, project["id"], links={}, name="renamed"), 400)
    assert Project.objects.get(id=project["id"]).name == "p1"
    same = _patch(admin, project["id"], id=project["id"], name="renamed")
    assert same.status_code == 200, same.content
    assert same.json()["project"]["id"] == project["id"] and "id" not in Project.objects.get(id=project["id"]).extra


def test_options_immutable_round_trips(admin: Any) -> None:
    # given a project created without options, then one created immutable (the CLI's --immutable)
    plain = _create(admin).json()["project"]
    assert plain["options"] == {}
    created = admin.post(PROJECTS, {"project": {"name": "locked", "options": {"immutable": True}}}, format="json")
    assert created.status_code == 201, created.content
    locked = created.json()["project"]
    # then the option is given back and stored
    assert locked["options"] == {"immutable": True}
    assert admin.get(f"{PROJECTS}/{locked['id']}").json()["project"]["options"] == {"immutable": True}
    assert Project.objects.get(id=locked["id"]).options == {"immutable": True}
    # when a plain project's option is set, then set to null, it is set, then unset (Keystone's null)
    patched = _patch(admin, plain["id"], options={"immutable": False})
    assert patched.status_code == 200, patched.content
    assert patched.json()["project"]["options"] == {"immutable": False}
    assert _patch(admin, plain["id"], options={"immutable": None}).json()["project"]["options"] == {}
    assert Project.objects.get(id=plain["id"]).options == {}


def test_immutable_project_refuses_changes_until_unlocked(admin: Any) -> None:
    # given an immutable project with a tag
    project = admin.post(PROJECTS, {"project": {"name": "locked", "tags": ["a"], "options": {"immutable": True}}},
                         format="json").json()["project"]
    url = f"{PROJECTS}/{project['id']}"
    expected = (f"Project {project['id']} is immutable: set its option 'immutable' to false before changing or "
                "deleting it.")
    # when it is changed, its tags changed, or it is deleted: Keystone's 403, nothing changes
    assert _error(_patch(admin, project["id"], name="renamed"), 403) == expected
    assert _error(_patch(admin, project["id"], options={"immutable": False}, name="renamed"), 403) == expected
    assert _error(admin.put(f"{url}/tags/b"), 403) == expected
    assert _error(admin.put(f"{url}/tags", {"tags": []}, format="json"), 403) == expected
    assert _error(admin.delete(f"{url}/tags/a"), 403) == expected
    assert _error(admin.delete(f"{url}/tags"), 403) == expected
    assert _error(admin.delete(url), 403) == expected
    stored = Project.objects.get(id=project["id"])
    assert stored.name == "locked" and [t.name for t in stored.tags.all()] == ["a"]
    # when the option alone is set to false, then the project can be changed and deleted
    unlocked = _patch(admin, project["id"], options={"immutable": False})
    assert unlocked.status_code == 200, unlocked.content
    assert unlocked.json()["project"]["options"] == {"immutable": False}
    assert _patch(admin, project["id"], name="renamed").status_code == 200
    assert admin.delete(url).status_code == 204
    assert not Project.objects.filter(id=project["id"]).exists()


@pytest.mark.parametrize("options", [{"colour": "blue"}, {"immutable": "yes"}, ["immutable"]])
def test_options_beyond_keystones_are_refused(admin: Any, options: Any) -> None:
    # when a create sends an option Keystone does not know, or a bad value, it is the schema's 400
    message = _error(_create(admin, options=options), 400)
    assert "options" in message
    assert not Project.objects.filter(name="p1").exists()
    # and so is an update, with nothing changed
    project = admin.post(PROJECTS, {"project": {"name": "p2"}}, format="json").json()["project"]
    _error(_patch(admin, project["id"], options=options, name="renamed"), 400)
    stored = Project.objects.get(id=project["id"])
    assert stored.options == {} and stored.name == "p2"


def test_list_filters_parent_id_and_is_domain(admin: Any) -> None:
    # given a project (and the fixtures' admin and demo projects), all under the Default domain
    project = _create(admin).json()["project"]
    everyone = {p["id"] for p in admin.get(PROJECTS).json()["projects"]}
    assert project["id"] in everyone and len(everyone) >= 3

    def listed(query: str) -> set[str]:
        response = admin.get(f"{PROJECTS}?{query}")
        assert response.status_code == 200, response.content
        return {p["id"] for p in response.json()["projects"]}

    # then the domain's children are every project, a project's none (the CLI's --parent)
    assert listed("parent_id=default") == everyone
    assert listed(f"parent_id={project['id']}") == set()
    # and no project acts as a domain
    assert listed("is_domain=false") == everyone
    assert listed("is_domain=true") == set()

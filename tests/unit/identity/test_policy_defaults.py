"""Every registered rule's default, evaluated for the six authenticated personas on a resource of
project ``demo`` owned by the member: the persona table of Nova's secure-RBAC defaults."""
from __future__ import annotations

import pytest

from cloudcore.core import policy
from cloudcore.core.context import RequestContext

PERSONAS = {
    "admin": RequestContext(user_id="u-admin", project_id="admin", roles=["admin", "manager", "member", "reader"],
                            is_admin=True),
    "project_admin": RequestContext(user_id="u-padmin", project_id="demo",
                                    roles=["admin", "manager", "member", "reader"]),
    "manager": RequestContext(user_id="u-manager", project_id="demo", roles=["manager", "member", "reader"]),
    "member": RequestContext(user_id="u-member", project_id="demo", roles=["member", "reader"]),
    "reader": RequestContext(user_id="u-reader", project_id="demo", roles=["reader"]),
    "other": RequestContext(user_id="u-other", project_id="demo2", roles=["member", "reader"]),
}
TARGET = {"project_id": "demo", "user_id": "u-member"}
ALLOWED = {
    "admin": {"admin"},
    "nobody": set(),
    "any": set(PERSONAS),
    "service_or_admin": {"admin"},
    "project_reader_or_admin": {"admin", "project_admin", "manager", "member", "reader"},
    "project_member_or_admin": {"admin", "project_admin", "manager", "member"},
    "project_manager_or_admin": {"admin", "project_admin", "manager"},
    "project_admin_or_admin": {"admin", "project_admin"},
    # the target here has no ``visibility``: a private namespace's readers
    "project_reader_or_admin_or_public": {"admin", "project_admin", "manager", "member", "reader"},
    "admin_or_owner_user": {"admin", "member"},
    "owner_user": {"member"},
    "project_reader": {"project_admin", "manager", "member", "reader"},
    "project_member": {"project_admin", "manager", "member"},
    "project_manager": {"project_admin", "manager"},
    "project_admin": {"project_admin"},
}


@pytest.mark.parametrize("rule", [r.name for r in policy.rules()])
def test_default_personas(rule: str) -> None:
    definition = policy.get_rule(rule)
    # a check with no row is a new check this table must learn, not a rule to leave unchecked
    assert definition.check in ALLOWED, f"persona table has no row for check {definition.check}"
    allowed = {name for name, actor in PERSONAS.items() if definition.default_allows(actor, TARGET)}
    assert allowed == ALLOWED[definition.check]


@pytest.mark.parametrize(("visibility", "allowed"), [
    ("public", set(PERSONAS)),
    ("private", {"admin", "project_admin", "manager", "member", "reader"}),
])
def test_a_public_target_is_read_by_every_project(visibility: str, allowed: set[str]) -> None:
    # Glance's metadefs namespaces: a public one is read by any project's reader, a private one by its own
    check = policy.CHECKS["project_reader_or_admin_or_public"]
    target = {**TARGET, "visibility": visibility}
    assert {name for name, actor in PERSONAS.items() if check(actor, target)} == allowed


def test_a_higher_role_alone_holds_the_roles_it_implies() -> None:
    # Keystone's tokens list the implied roles; a context made with the higher role alone (a task's,
    # a test's) is read the same way: admin > manager > member > reader
    manager = RequestContext(user_id="u", project_id="demo", roles=["manager"])
    assert manager.is_project_manager and manager.is_project_member and manager.is_project_reader
    assert not manager.is_project_admin
    member = RequestContext(user_id="u", project_id="demo", roles=["member"])
    assert member.is_project_member and not member.is_project_manager
    assert RequestContext(user_id="u", project_id="demo", roles=["admin"]).is_project_manager

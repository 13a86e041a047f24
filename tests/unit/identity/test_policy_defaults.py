"""Every registered rule's default, evaluated for the five authenticated personas on a resource of
project ``demo`` owned by the member: the persona table of Nova's secure-RBAC defaults."""
from __future__ import annotations

import pytest

from cloudcore.core import policy
from cloudcore.core.context import RequestContext

PERSONAS = {
    "admin": RequestContext(user_id="u-admin", project_id="admin", roles=["admin", "member", "reader"],
                            is_admin=True),
    "project_admin": RequestContext(user_id="u-padmin", project_id="demo", roles=["admin", "member", "reader"]),
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
    "project_reader_or_admin": {"admin", "project_admin", "member", "reader"},
    "project_member_or_admin": {"admin", "project_admin", "member"},
    "project_admin_or_admin": {"admin", "project_admin"},
    "admin_or_owner_user": {"admin", "member"},
    "owner_user": {"member"},
    "project_reader": {"project_admin", "member", "reader"},
    "project_member": {"project_admin", "member"},
    "project_admin": {"project_admin"},
}


@pytest.mark.parametrize("rule", [r.name for r in policy.rules()])
def test_default_personas(rule: str) -> None:
    definition = policy.get_rule(rule)
    if definition.check not in ALLOWED:
        pytest.skip(f"persona table has no row for check {definition.check}")
    allowed = {name for name, actor in PERSONAS.items() if definition.default_allows(actor, TARGET)}
    assert allowed == ALLOWED[definition.check]

"""Service-level tests of the identity writes: each checks its Keystone rule at entry (a project
member is refused with ``PolicyNotAuthorized`` and nothing is written) and, allowed, writes."""
from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import Permission

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Forbidden, PolicyNotAuthorized
from identity.models import Project, Role, Token, User
from identity.services import accounts, role_admin, tokens
from identity.services.roles import assigned_roles

pytestmark = pytest.mark.django_db


def _ctx(user: User, project: Project) -> RequestContext:
    return tokens.context_for_token(tokens.token_issue(user=user, project=project).value)[1]


@pytest.fixture
def actors(people: dict[str, Any]) -> dict[str, RequestContext]:
    return {"admin": _ctx(people["admin"], people["admin_project"]),
            "member": _ctx(people["demo"], people["demo_project"])}


def test_project_and_user_writes_refused_to_a_member(actors: dict[str, RequestContext],
                                                     people: dict[str, Any]) -> None:
    # given a project member
    member = actors["member"]
    # when it creates, updates or deletes projects and users, then each rule refuses first
    with pytest.raises(PolicyNotAuthorized, match="identity:create_project"):
        accounts.project_create(actor=member, name="p1")
    with pytest.raises(PolicyNotAuthorized, match="identity:update_project"):
        accounts.project_update(actor=member, project_id="no-such-project", name="x")
    with pytest.raises(PolicyNotAuthorized, match="identity:delete_project"):
        accounts.project_delete(actor=member, project_id=people["demo_project"].id)
    with pytest.raises(PolicyNotAuthorized, match="identity:create_user"):
        accounts.user_create(actor=member, name="u1", password="pw")
    with pytest.raises(PolicyNotAuthorized, match="identity:update_user"):
        accounts.user_update(actor=member, user_id=people["reader"].id, enabled=False)
    with pytest.raises(PolicyNotAuthorized, match="identity:delete_user"):
        accounts.user_delete(actor=member, user_id=people["reader"].id)
    # then nothing was written
    assert not Project.objects.filter(name="p1").exists() and not User.objects.filter(name="u1").exists()
    assert Project.objects.filter(id=people["demo_project"].id).exists()
    assert User.objects.get(id=people["reader"].id).enabled


def test_project_and_user_writes_by_an_admin(actors: dict[str, RequestContext]) -> None:
    # given a cloud admin
    admin = actors["admin"]
    # when it creates a project and a user with it as default project, then updates and deletes
    project = accounts.project_create(actor=admin, name="p1", description="d")
    user = accounts.user_create(actor=admin, name="u1", password="pw", default_project_id=project.id)
    assert User.objects.get(id=user.id).default_project_id == project.id
    accounts.project_update(actor=admin, project_id=project.id, name="p2")
    accounts.user_update(actor=admin, user_id=user.id, default_project_id=None, email="u@example.org")
    # then the rows hold the changes, and deletes remove them
    assert Project.objects.get(id=project.id).name == "p2"
    row = User.objects.get(id=user.id)
    assert row.default_project_id is None and row.email == "u@example.org"
    accounts.user_delete(actor=admin, user_id=user.id)
    accounts.project_delete(actor=admin, project_id=project.id)
    assert not User.objects.filter(id=user.id).exists() and not Project.objects.filter(id=project.id).exists()


def test_password_change_is_the_users_own_and_revokes_its_tokens(actors: dict[str, RequestContext],
                                                                 people: dict[str, Any]) -> None:
    # given the demo user with a token
    demo = people["demo"]
    # when the admin changes demo's password through the self-service, then it is refused
    with pytest.raises(Forbidden, match="identity:change_password"):
        accounts.user_password_change(actor=actors["admin"], user_id=demo.id, original_password="demo-pw",
                                      password="new")
    # when demo changes it, then the new one works and demo's tokens are revoked
    accounts.user_password_change(actor=actors["member"], user_id=demo.id, original_password="demo-pw",
                                  password="new")
    assert User.objects.get(id=demo.id).check_password("new")
    assert not Token.objects.filter(user=demo, revoked=False).exists()


def test_role_and_grant_writes(actors: dict[str, RequestContext], people: dict[str, Any]) -> None:
    # given a member and an admin
    member, admin = actors["member"], actors["admin"]
    project, reader = people["demo_project"], people["reader"]
    # when the member creates a role or a grant, then the rules refuse and nothing is written
    with pytest.raises(PolicyNotAuthorized, match="identity:create_role"):
        role_admin.role_create(actor=member, name="auditor")
    assert not Role.objects.filter(name="auditor").exists()
    with pytest.raises(PolicyNotAuthorized, match="identity:create_grant"):
        role_admin.grant_create(actor=member, project_id=project.id, user_id=reader.id, role_id="member")
    assert assigned_roles(user=reader, project=project) == ["reader"]
    # when the admin creates the role and grants it, then the role, its permission and the
    # assignment exist; revoking and deleting remove them
    role = role_admin.role_create(actor=admin, name="auditor", description="reads audits")
    assert Permission.objects.filter(codename="role_auditor").exists()
    role_admin.grant_create(actor=admin, project_id=project.id, user_id=reader.id, role_id=role.id)
    assert "auditor" in assigned_roles(user=reader, project=project)
    with pytest.raises(PolicyNotAuthorized, match="identity:revoke_grant"):
        role_admin.grant_revoke(actor=member, project_id=project.id, user_id=reader.id, role_id=role.id)
    role_admin.grant_revoke(actor=admin, project_id=project.id, user_id=reader.id, role_id=role.id)
    assert "auditor" not in assigned_roles(user=reader, project=project)
    with pytest.raises(PolicyNotAuthorized, match="identity:delete_role"):
        role_admin.role_delete(actor=member, role_id=role.id)
    role_admin.role_delete(actor=admin, role_id=role.id)
    assert not Role.objects.filter(name="auditor").exists()
    assert not Permission.objects.filter(codename="role_auditor").exists()


def test_token_revoke_is_the_owners_or_an_admins(actors: dict[str, RequestContext],
                                                 people: dict[str, Any]) -> None:
    # given a token of the reader
    token = tokens.token_issue(user=people["reader"], project=people["demo_project"])
    # when another member revokes it, then the policy refuses
    with pytest.raises(PolicyNotAuthorized, match="identity:revoke_token"):
        tokens.token_revoke(actor=actors["member"], token_id=token.value)
    assert not Token.objects.get(id_hash=token.id_hash).revoked
    # when an admin does, then it is revoked
    tokens.token_revoke(actor=actors["admin"], token_id=token.value)
    assert Token.objects.get(id_hash=token.id_hash).revoked


def test_policy_rule_grants_need_the_operator_rule(actors: dict[str, RequestContext],
                                                   people: dict[str, Any]) -> None:
    from cloudcore.core import policy
    from cloudcore.core.exceptions import Invalid
    from identity.services.policy_admin import policy_rule_grant_change

    # given a rule nobody holds and a project
    rule = "test:services:rule"
    policy.register(rule, "nobody", "a rule for the service test")
    project = people["demo_project"]
    # when a member grants it to its own project, then the operator rule refuses; nothing granted
    with pytest.raises(PolicyNotAuthorized, match="identity:grant_policy_rule"):
        policy_rule_grant_change(actor=actors["member"], rule=rule, grant=True, project_id=project.id)
    assert policy.grants_of(rule) == []
    # when the admin grants it without a holder or for an unknown rule, then it is a bad request
    with pytest.raises(Invalid, match="Choose a user"):
        policy_rule_grant_change(actor=actors["admin"], rule=rule, grant=True)
    with pytest.raises(Invalid):
        policy_rule_grant_change(actor=actors["admin"], rule="no:such:rule", grant=True, project_id=project.id)
    # when the admin grants it to the project and revokes it, then the grant comes and goes
    policy_rule_grant_change(actor=actors["admin"], rule=rule, grant=True, project_id=project.id)
    assert policy.grants_of(rule) == [{"group": f"project-members:{project.id}", "project": project.id}]
    with pytest.raises(PolicyNotAuthorized, match="identity:revoke_policy_rule"):
        policy_rule_grant_change(actor=actors["member"], rule=rule, grant=False, project_id=project.id)
    policy_rule_grant_change(actor=actors["admin"], rule=rule, grant=False, project_id=project.id)
    assert policy.grants_of(rule) == []

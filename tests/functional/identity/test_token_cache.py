"""A validated token's roles are remembered (one statement per request instead of four), and
every identity change that can end or narrow it is seen by the next request: revocation, a role
removed, the user or the project disabled, and a change made by another process (which bumps
only the shared stamp)."""
from __future__ import annotations

from typing import Any

import pytest
from django.db.models import F
from django.test import override_settings
from guardian.models import UserObjectPermission

from cloudcore.core.exceptions import Unauthorized
from identity.models import IdentityChangeStamp, Token
from identity.services import token_cache
from identity.services.roles import role_assign, role_unassign
from identity.services.tokens import context_for_token, token_issue
from tests.apihelpers import make_identity

from .conftest import issue, token_client

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _empty_cache() -> Any:
    token_cache.clear()
    yield
    token_cache.clear()


@pytest.fixture
def alice() -> Any:
    user, project = make_identity("alice", project="demo", roles=["member"])
    return user, project, token_issue(user=user, project=project).value


def test_a_validated_token_costs_one_statement(alice: Any, django_assert_num_queries: Any) -> None:
    # given a token validated once
    _, _, token = alice
    first_user, first = context_for_token(token, request_id="req-1")
    # when it is presented again
    with django_assert_num_queries(1):  # the change stamps (the token's validation is remembered)
        user, ctx = context_for_token(token, request_id="req-2")
    # then the same user and roles come back, in a context of its own
    assert user.id == first_user.id and ctx.roles == first.roles == ["member", "reader"]
    assert ctx.request_id == "req-2" and first.request_id == "req-1" and ctx is not first


def test_a_token_issued_by_a_process_is_validated_there_before_its_first_request(
        people: Any, django_assert_num_queries: Any) -> None:
    # given a token issued through the API (a client logging in)
    response = issue("demo", "demo-pw")
    assert response.status_code == 201
    token = response["X-Subject-Token"]
    # when its first request is validated in the process that issued it
    with django_assert_num_queries(1):  # the change stamps: its validation was remembered at issue
        user, ctx = context_for_token(token, request_id="req-1")
    # then it acts for the user and the roles the token was issued with
    assert user.name == "demo" and ctx.project_name == "demo"
    assert ctx.roles == sorted(r["name"] for r in response.json()["token"]["roles"])


def test_a_token_validated_at_issue_is_refused_once_its_user_is_disabled(people: Any) -> None:
    # given a token issued (and so validated ahead), then its user disabled
    token = issue("demo", "demo-pw")["X-Subject-Token"]
    user = people["demo"]
    user.enabled = False
    user.save()
    # then its first request is refused
    assert token_client(token).get("/identity/v3/auth/catalog").status_code == 401


def test_a_revoked_token_is_refused_by_the_next_request(alice: Any) -> None:
    # given a token the catalog was read with
    _, _, token = alice
    client = token_client(token)
    assert client.get("/identity/v3/auth/catalog").status_code == 200
    # when it is revoked through the API
    assert client.delete("/identity/v3/auth/tokens", HTTP_X_SUBJECT_TOKEN=token).status_code == 204
    # then the next request with it is refused
    assert client.get("/identity/v3/auth/catalog").status_code == 401


def test_a_removed_role_is_seen_by_the_next_request(alice: Any) -> None:
    user, project, token = alice
    role_assign(user=user, project=project, role="admin")
    assert "admin" in context_for_token(token)[1].roles
    role_unassign(user=user, project=project, role="admin")
    assert context_for_token(token)[1].roles == ["member", "reader"]


@pytest.mark.parametrize("what", ["user", "project"])
def test_a_disabled_user_or_project_is_refused(alice: Any, what: str) -> None:
    user, project, token = alice
    context_for_token(token)
    row = user if what == "user" else project
    row.enabled = False
    row.save()
    with pytest.raises(Unauthorized):
        context_for_token(token)


def test_a_role_removed_by_another_process_is_seen(alice: Any) -> None:
    # given a token this process validated as an admin of its project
    user, project, token = alice
    role_assign(user=user, project=project, role="admin")
    assert "admin" in context_for_token(token)[1].roles
    # when another process removes the role: the grant row goes and it bumps the shared stamp
    # (this process's memory is left as it was)
    UserObjectPermission.objects.filter(user=user, permission__codename="role_admin").update(object_pk="gone")
    IdentityChangeStamp.objects.filter(key=user.id).update(seq=F("seq") + 1)
    # then this process's next request has the role no more
    assert context_for_token(token)[1].roles == ["member", "reader"]


def test_a_token_revoked_by_another_process_is_refused(alice: Any) -> None:
    # given a token this process validated
    user, _, token = alice
    context_for_token(token)
    # when another process revokes it as token_revoke does: the row, and its user's stamp bumped
    Token.objects.update(revoked=True)
    IdentityChangeStamp.objects.filter(key=user.id).update(seq=F("seq") + 1)
    # then this process's next request refuses it
    with pytest.raises(Unauthorized):
        context_for_token(token)


def test_a_token_revoked_without_a_stamp_is_refused_once_its_entry_ends(alice: Any) -> None:
    # a raw write that bumps no stamp is seen after TOKEN_CACHE_SECONDS (here: nothing remembered)
    _, _, token = alice
    with override_settings(TOKEN_CACHE_SECONDS=0):
        context_for_token(token)
        Token.objects.update(revoked=True)
        with pytest.raises(Unauthorized):
            context_for_token(token)


def test_a_remembered_token_is_checked_by_the_stamps_alone(alice: Any,
                                                           django_assert_num_queries: Any) -> None:
    # given a validated token, when it is presented again: one statement, the change stamps
    _, _, token = alice
    context_for_token(token)
    with django_assert_num_queries(1) as captured:
        context_for_token(token)
    assert "identity_token" not in captured.captured_queries[0]["sql"]


def test_a_new_token_or_another_users_grant_does_not_end_the_others(alice: Any,
                                                                     django_assert_num_queries: Any) -> None:
    user, project, token = alice
    context_for_token(token)
    token_issue(user=user, project=project)
    make_identity("bob", project="demo", roles=["admin"])  # a new user, granted a role
    with django_assert_num_queries(1):
        context_for_token(token)


def test_a_group_losing_a_role_is_seen_by_its_members(alice: Any) -> None:
    from cloudcore.core.context import RequestContext
    from identity.services.groups import group_create, group_user_add
    from identity.services.roles import group_role_assign, group_role_unassign

    user, project, token = alice
    admin = RequestContext.system()
    group = group_create(actor=admin, name="ops")
    group_user_add(actor=admin, group_id=group.id, user_id=user.id)
    group_role_assign(group=group, project=project, role="admin")
    assert "admin" in context_for_token(token)[1].roles
    group_role_unassign(group=group, project=project, role="admin")
    assert context_for_token(token)[1].roles == ["member", "reader"]


def test_entries_end_with_the_ttl_and_the_bound(alice: Any, monkeypatch: pytest.MonkeyPatch,
                                                django_assert_num_queries: Any) -> None:
    user, project, token = alice
    with override_settings(TOKEN_CACHE_SECONDS=0):
        context_for_token(token)
        with django_assert_num_queries(4):  # token, roles (three): nothing remembered
            context_for_token(token)
    # at most MAX_ENTRIES tokens: the least recently used goes first
    monkeypatch.setattr(token_cache, "MAX_ENTRIES", 2)
    others = [token_issue(user=user, project=project).value for _ in range(2)]
    for value in (token, *others):
        context_for_token(value)
    with django_assert_num_queries(4):
        context_for_token(token)


def test_a_login_reads_the_users_roles_for_its_scope_and_for_its_token_only(people: Any, monkeypatch: Any) -> None:
    """A password login scoped to a project reads the user's roles there twice: to allow the scope,
    and for the token (validated ahead, remembered); its body shows those, not a third reading."""
    from identity.services import roles as role_services
    from identity.services import tokens as token_services

    calls: list[str] = []
    original = role_services.roles_for

    def counted(**kwargs: Any) -> list[str]:
        calls.append(kwargs["project"].name)
        return original(**kwargs)

    monkeypatch.setattr(role_services, "roles_for", counted)
    monkeypatch.setattr(token_services, "roles_for", counted)
    response = issue("demo", "demo-pw")
    assert response.status_code == 201
    assert calls == ["demo", "demo"]
    shown = sorted(r["name"] for r in response.json()["token"]["roles"])
    _, ctx = context_for_token(response["X-Subject-Token"])
    assert shown == sorted(ctx.roles) and "member" in shown

"""The policy registry: default personas and guardian grants."""
from __future__ import annotations

import pytest

from cloudcore.core import policy
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import PolicyNotAuthorized
from tests.apihelpers import make_identity

pytestmark = pytest.mark.django_db

RULE = "test:rule:member"
NOBODY = "test:rule:nobody"
ADMIN = "test:rule:admin"
policy.register(RULE, "project_member_or_admin", "test rule")
policy.register(NOBODY, "nobody", "test rule open to nobody by default")
policy.register(ADMIN, "admin", "test rule for admins")


def ctx(project: str | None, roles: list[str], *, admin: bool = False, user: str | None = "u") -> RequestContext:
    return RequestContext(user_id=user, project_id=project, roles=roles, is_admin=admin)


@pytest.mark.parametrize(
    ("actor", "allowed"),
    [
        (ctx("p1", ["member", "reader"]), True),
        (ctx("p1", ["reader"]), False),
        (ctx("p2", ["member", "reader"]), False),
        (ctx("admin-project", ["admin", "member", "reader"], admin=True), True),
        (ctx("p2", ["admin", "member", "reader"]), False),
    ],
)
def test_member_or_admin_default(actor: RequestContext, allowed: bool) -> None:
    assert policy.can(actor, RULE, {"project_id": "p1"}) is allowed


def test_nobody_denies_cloud_admin_too() -> None:
    with pytest.raises(PolicyNotAuthorized) as err:
        policy.authorize(ctx("a", ["admin"], admin=True), NOBODY, {"project_id": "a"})
    assert str(err.value) == f"Policy doesn't allow {NOBODY} to be performed."


def test_unknown_rule_is_a_programming_error() -> None:
    with pytest.raises(policy.UnknownRule):
        policy.can(ctx("p", []), "no:such:rule")


def test_grant_to_user_for_one_project() -> None:
    user, project = make_identity("bob", project="demo", roles=["member"])
    _, other = make_identity("carol", project="other", roles=["member"])
    actor = ctx(project.id, ["member", "reader"], user=user.id)
    assert not policy.can(actor, NOBODY, {"project_id": project.id})
    # when the rule is granted to bob on his project
    policy.grant(NOBODY, user=user, project=project)
    # then it passes there, not on another project's resources
    assert policy.can(actor, NOBODY, {"project_id": project.id})
    assert not policy.can(actor, NOBODY, {"project_id": other.id})
    policy.revoke(NOBODY, user=user, project=project)
    assert not policy.can(actor, NOBODY, {"project_id": project.id})


def test_grant_to_project_alone_covers_its_members() -> None:
    bob, project = make_identity("bob", project="demo", roles=["member"])
    dave, _ = make_identity("dave", project="demo", roles=["reader"])
    eve, other = make_identity("eve", project="other", roles=["member"])
    policy.grant(NOBODY, project=project)
    assert policy.can(ctx(project.id, ["member"], user=bob.id), NOBODY, {"project_id": project.id})
    assert policy.can(ctx(project.id, ["reader"], user=dave.id), NOBODY, {"project_id": project.id})
    assert not policy.can(ctx(other.id, ["member"], user=eve.id), NOBODY, {"project_id": other.id})
    assert not policy.can(ctx(other.id, ["member"], user=eve.id), NOBODY, {"project_id": project.id})
    assert policy.grants_of(NOBODY) == [{"group": f"project-members:{project.id}", "project": project.id}]


def test_global_grant_to_group() -> None:
    from django.contrib.auth.models import Group

    bob, project = make_identity("bob", project="demo", roles=["member"])
    ops = Group.objects.create(name="ops")
    bob.groups.add(ops)
    policy.grant(ADMIN, group=ops)
    assert policy.can(ctx(project.id, ["member"], user=bob.id), ADMIN, {"project_id": "anything"})


def test_a_rule_checked_while_another_thread_discovers_waits_for_every_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    # given: an empty registry, and a discovery (thread A) that is inside its first policies import
    # when a second thread (B, a gunicorn thread's first request) asks for a rule
    import importlib
    import threading

    rules = dict(policy._REGISTRY)
    monkeypatch.setattr(policy, "_REGISTRY", {})
    monkeypatch.setattr(policy, "_DISCOVERED", False)
    b_started, a_importing = threading.Event(), threading.Event()
    real_import = importlib.import_module

    def slow_import(name: str, package: str | None = None) -> object:
        if name.endswith(".policies") and not policy._REGISTRY:
            a_importing.set()
            b_started.wait(5)
            threading.Event().wait(0.2)  # B's lookup would have failed by now without the lock
            policy._REGISTRY.update(rules)  # what importing the policies modules registers
        return real_import(name, package)

    monkeypatch.setattr(importlib, "import_module", slow_import)
    discovering = threading.Thread(target=policy.autodiscover)
    discovering.start()
    assert a_importing.wait(5)
    found: list[object] = []

    def lookup() -> None:
        b_started.set()
        try:
            found.append(policy.get_rule("os_compute_api:servers:create"))
        except policy.UnknownRule as exc:
            found.append(exc)

    checking = threading.Thread(target=lookup)
    checking.start()
    checking.join(10)
    discovering.join(10)
    # then: B got the rule (it waited for A's discovery), not "unknown rule"
    assert found == [rules["os_compute_api:servers:create"]]

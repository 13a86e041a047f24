"""Policy overrides narrow a rule as well as widen it: ``manage.py policy override`` writes the
policy file, every check reads it (re-read when it changes), grants still widen on top."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError

from cloudcore.core import policy
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import PolicyNotAuthorized
from tests.apihelpers import make_identity
from tests.unit.identity.test_policy_command_and_demo import run

pytestmark = pytest.mark.django_db
CREATE = "os_compute_api:servers:create"


@pytest.fixture
def policy_file(settings: Any, tmp_path: Path) -> Path:
    settings.POLICY_FILE = tmp_path / "policy.yaml"
    return tmp_path / "policy.yaml"


def member_of_demo(name: str = "alice") -> tuple[RequestContext, Any, Any]:
    user, project = make_identity(name, project="demo", roles=["member"])
    return RequestContext(user_id=user.id, project_id=project.id, roles=["member", "reader"]), user, project


def test_an_override_takes_a_right_away_and_reset_gives_it_back(policy_file: Path) -> None:
    # given a project member, who may create servers by default
    actor, _user, project = member_of_demo()
    target = {"project_id": project.id}
    assert policy.can(actor, CREATE, target)
    # when the operator narrows the rule to admins
    assert "now checks admin" in run("override", CREATE, "admin")
    # then the member is refused with the usual 403, and the file says so
    with pytest.raises(PolicyNotAuthorized):
        policy.authorize(actor, CREATE, target)
    assert f"{CREATE}: admin" in policy_file.read_text()
    admin = RequestContext(user_id="x", project_id="admin-project", roles=["admin"], is_admin=True)
    assert policy.can(admin, CREATE, target)
    shown = run("show", CREATE)
    assert "default:     project_member_or_admin" in shown and "override:    admin" in shown
    assert "(overridden; default project_member_or_admin)" in run("list", "--prefix", CREATE)
    assert "denied (override admin)" in run("check", CREATE, "--user", "alice", "--project", "demo")
    # and a reset gives the right back
    assert "back to its default" in run("override", CREATE, "--reset")
    assert policy.can(actor, CREATE, target)
    assert CREATE not in policy_file.read_text()


def test_a_grant_still_widens_a_narrowed_rule(policy_file: Path) -> None:
    actor, user, project = member_of_demo()
    run("override", CREATE, "nobody")
    assert not policy.can(actor, CREATE, {"project_id": project.id})
    policy.grant(CREATE, user=user, project=project)
    assert policy.can(actor, CREATE, {"project_id": project.id})
    assert not policy.can(actor, CREATE, {"project_id": "elsewhere"})


def test_an_override_can_widen_too_and_oslo_spellings_are_read(policy_file: Path) -> None:
    actor, _user, _project = member_of_demo()
    rule = "os_compute_api:os-aggregates:index"
    assert not policy.can(actor, rule)
    # the file edited by hand, as operators edit policy.yaml
    policy_file.write_text(f'"{rule}": ""\n"{CREATE}": "!"\n')
    assert policy.can(actor, rule)
    assert not policy.can(actor, CREATE)


def test_an_unknown_check_in_the_file_denies(policy_file: Path) -> None:
    actor, _user, project = member_of_demo()
    policy_file.write_text(f'"{CREATE}": "role:member"\n')
    assert not policy.can(actor, CREATE, {"project_id": project.id})


def test_override_errors_and_dry_run(policy_file: Path) -> None:
    with pytest.raises(CommandError, match="Unknown check"):
        run("override", CREATE, "sometimes")
    with pytest.raises(CommandError, match="needs a check"):
        run("override", CREATE)
    with pytest.raises(CommandError, match="Unknown policy rule"):
        run("override", "no:such:rule", "admin")
    assert "(dry run)" in run("override", CREATE, "admin", "--dry-run")
    assert not policy_file.exists()


def test_the_file_is_looked_at_once_per_request_and_a_change_is_seen_by_the_next(policy_file: Path,
                                                                                 monkeypatch: Any) -> None:
    from cloudcore.core import scope

    # given a member, and the policy file's stat counted
    actor, _user, project = member_of_demo()
    target = {"project_id": project.id}
    stats: list[str] = []
    real_stat = Path.stat

    def counted_stat(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self == policy_file:
            stats.append(str(self))
        return real_stat(self, *args, **kwargs)

    monkeypatch.setattr(Path, "stat", counted_stat)
    # when one request checks several rules
    with scope.request_scope():
        assert policy.can(actor, CREATE, target) and policy.can(actor, "os_compute_api:servers:show", target)
        assert not policy.can(actor, "os_compute_api:os-extended-server-attributes", target)
    # then the file was looked at once
    assert len(stats) == 1
    # and when another process narrows the rule (writes the file), the next request sees it
    policy_file.write_text(f"{CREATE}: admin\n")
    with scope.request_scope():
        assert not policy.can(actor, CREATE, target)
    # while an override written inside a request is seen by that request's next check
    with scope.request_scope():
        assert not policy.can(actor, CREATE, target)
        policy.override_set(CREATE, None)
        assert policy.can(actor, CREATE, target)

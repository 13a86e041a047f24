"""``manage.py policy`` over the registry and guardian grants; the identity and flavor demo setups."""
from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.core.management import CommandError, call_command
from django.test import override_settings

from cloudcore.core import policy
from cloudcore.core.context import RequestContext
from identity import demo as identity_demo
from identity.models import PolicyRule, Project, Role, User
from identity.services.roles import roles_for
from identity.services.tokens import is_admin_project
from servers import demo as servers_demo
from servers.models import Flavor
from tests.apihelpers import make_identity

pytestmark = pytest.mark.django_db
RULE = "os_compute_api:os-aggregates:index"


def run(*args: str) -> str:
    out = StringIO()
    call_command("policy", *args, stdout=out)
    return out.getvalue()


def test_every_nova_rule_is_registered_with_its_default() -> None:
    names = {r.name: r.check for r in policy.rules()}
    assert names["compute:servers:resize:cross_cell"] == "nobody"
    assert names["os_compute_api:os-shelve:unshelve_to_host"] == "project_admin_or_admin"
    assert names["os_compute_api:os-server-external-events:create"] == "service_or_admin"
    assert names["os_compute_api:servers:create"] == "project_member_or_admin"
    assert names["os_compute_api:servers:show"] == "project_reader_or_admin"
    for name in ("os_compute_api:os-instance-actions:events", "os_compute_api:servers:start",
                 "os_compute_api:os-lock-server:unlock:unlock_override", "os_compute_api:os-migrations:index",
                 "os_compute_api:servers:migrations:show", "os_compute_api:os-volumes-attachments:swap",
                 "os_compute_api:os-hypervisors:list", "os_compute_api:os-services:list",
                 "os_compute_api:os-quota-sets:show", "os_compute_api:os-server-tags:index",
                 "os_compute_api:server-metadata:index", "os_compute_api:os-flavor-access",
                 "os_compute_api:limits", "os_compute_api:os-keypairs:create"):
        assert name in names
    assert all(r.description and r.operations for r in policy.rules() if r.name.startswith("os_compute_api:"))


def test_list_and_show() -> None:
    listing = run("list", "--prefix", "os_compute_api:os-aggregates")
    assert RULE in listing and "admin" in listing
    shown = run("show", "compute:servers:resize:cross_cell")
    assert "default:     nobody" in shown and "grants:      none" in shown


def test_grant_and_revoke_for_a_user_on_a_project() -> None:
    user, project = make_identity("alice", project="demo", roles=["member"])
    actor = RequestContext(user_id=user.id, project_id=project.id, roles=["member", "reader"])
    assert not policy.can(actor, "compute:servers:resize:cross_cell", {"project_id": project.id})
    # when the operator grants the rule to alice on demo
    assert "granted to user alice on project demo" in run(
        "grant", "compute:servers:resize:cross_cell", "--user", "alice", "--project", "demo")
    # then it passes for her there, and show lists the grant
    assert policy.can(actor, "compute:servers:resize:cross_cell", {"project_id": project.id})
    assert "grant:       user alice on project demo" in run("show", "compute:servers:resize:cross_cell")
    run("revoke", "compute:servers:resize:cross_cell", "--user", "alice", "--project", "demo")
    assert not policy.can(actor, "compute:servers:resize:cross_cell", {"project_id": project.id})


def test_project_only_grant_covers_every_member() -> None:
    user, project = make_identity("bob", project="demo", roles=["reader"])
    actor = RequestContext(user_id=user.id, project_id=project.id, roles=["reader"])
    run("grant", RULE, "--project", "demo")
    assert policy.can(actor, RULE, {"project_id": project.id})
    assert not policy.can(actor, RULE, {"project_id": "someone-else"})
    run("revoke", RULE, "--project", "demo")
    assert not policy.can(actor, RULE, {"project_id": project.id})


def test_global_group_grant() -> None:
    from django.contrib.auth.models import Group

    user, project = make_identity("carol", project="demo", roles=["member"])
    group = Group.objects.create(name="operators")
    user.groups.add(group)
    run("grant", RULE, "--group", "operators")
    actor = RequestContext(user_id=user.id, project_id=project.id, roles=["member"])
    assert policy.can(actor, RULE, {"project_id": "any-project"})


def test_errors_are_command_errors() -> None:
    with pytest.raises(CommandError, match="Unknown policy rule"):
        run("show", "no:such:rule")
    with pytest.raises(CommandError, match="could not be found"):
        run("grant", RULE, "--user", "ghost")
    with pytest.raises(CommandError, match="needs"):
        run("grant", RULE)


def test_rule_permissions_exist_for_django_admin() -> None:
    codenames = set(PolicyRule.objects.rules().values_list("codename", flat=True))
    assert RULE in codenames and "compute:servers:resize:cross_cell" in codenames


@override_settings(PUBLIC_URL="http://cloud.example:8000")
def test_identity_demo_setup_is_idempotent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLOUDCORE_ADMIN_PASSWORD", raising=False)
    monkeypatch.setenv("CLOUDCORE_DEMO_PASSWORD", "demo-pw")
    with override_settings(VAR_DIR=tmp_path):
        identity_demo.setup(lambda line: None)
        first = (tmp_path / "credentials.txt").read_text()
        identity_demo.setup(lambda line: None)
        # the generated admin password is kept across runs
        assert (tmp_path / "credentials.txt").read_text() == first
        clouds = yaml.safe_load((tmp_path / "clouds.yaml").read_text())["clouds"]
    assert set(clouds) >= {"cloudcore-admin", "cloudcore-demo", "cloudcore-demo-admin"}
    demo = clouds["cloudcore-demo"]
    assert demo["auth"]["auth_url"] == "http://cloud.example:8000/identity/v3"
    assert demo["auth"]["password"] == "demo-pw" and demo["auth"]["project_name"] == "demo"
    assert demo["auth"]["user_domain_name"] == "Default" and demo["region_name"] == "RegionOne"
    assert demo["identity_api_version"] == 3
    admin_pw = clouds["cloudcore-admin"]["auth"]["password"]
    assert f"admin_password={admin_pw}" in first
    assert User.objects.get(name="admin").check_password(admin_pw)
    # roles as DESIGN.md section 9 says
    admin_project, demo_project = Project.objects.get(name="admin"), Project.objects.get(name="demo")
    # admin implies manager implies member implies reader, as keystone-manage bootstrap chains them
    assert roles_for(user=User.objects.get(name="admin"), project=admin_project) == [
        "admin", "manager", "member", "reader"]
    assert Role.objects.filter(name="manager").exists()
    assert is_admin_project(admin_project)
    assert roles_for(user=User.objects.get(name="demo-admin"), project=demo_project)[0] == "admin"
    assert roles_for(user=User.objects.get(name="demo"), project=demo_project) == ["member", "reader"]
    assert roles_for(user=User.objects.get(name="demo2"), project=demo_project) == []
    assert User.objects.filter(name="admin").count() == 1
    # and the service role keystone-manage bootstrap creates, an ordinary role made again by a rerun
    assert Role.objects.filter(name="service").exists()
    Role.objects.filter(name="service").delete()
    with override_settings(VAR_DIR=tmp_path):
        identity_demo.setup(lambda line: None)
    assert Role.objects.filter(name="service").count() == 1


def test_flavor_demo_setup_is_idempotent() -> None:
    servers_demo.setup(lambda line: None)
    servers_demo.setup(lambda line: None)
    assert list(Flavor.objects.order_by("flavorid").values_list("flavorid", "name", "vcpus", "memory_mb",
                                                                "root_gb")) == [
        ("1", "m1.tiny", 1, 512, 1), ("2", "m1.small", 1, 2048, 20), ("3", "m1.medium", 2, 4096, 40),
        ("4", "m1.large", 4, 8192, 80)]


def test_generated_demo_passwords_never_begin_with_a_dash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # given no password in the environment nor stored, and draws of which every other one begins with "-"
    monkeypatch.delenv("CLOUDCORE_ADMIN_PASSWORD", raising=False)
    monkeypatch.delenv("CLOUDCORE_DEMO_PASSWORD", raising=False)
    draws = ["-dash1", "plain1", "-dash2", "plain2"]
    monkeypatch.setattr(identity_demo.secrets, "token_urlsafe", lambda n: draws.pop(0))
    with override_settings(VAR_DIR=tmp_path):
        generated = identity_demo.demo_passwords()
    # then the dash-led ones were drawn again (``--os-password -dash1`` is an option to the CLI)
    assert generated == {"admin_password": "plain1", "demo_password": "plain2"} and draws == []


def test_environment_passwords_override_stored_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with override_settings(VAR_DIR=tmp_path):
        monkeypatch.delenv("CLOUDCORE_ADMIN_PASSWORD", raising=False)
        monkeypatch.delenv("CLOUDCORE_DEMO_PASSWORD", raising=False)
        identity_demo.setup(lambda line: None)
        generated = identity_demo.demo_passwords()
        assert User.objects.get(name="demo2").check_password(generated["demo_password"])
        # when the operator sets the passwords in the environment and runs the setup again
        monkeypatch.setenv("CLOUDCORE_ADMIN_PASSWORD", "admin-from-env")
        monkeypatch.setenv("CLOUDCORE_DEMO_PASSWORD", "demo-from-env")
        identity_demo.setup(lambda line: None)
    # then users and the credentials file follow the environment
    assert User.objects.get(name="admin").check_password("admin-from-env")
    assert User.objects.get(name="demo-admin").check_password("demo-from-env")
    assert "demo_password=demo-from-env" in (tmp_path / "credentials.txt").read_text()


def test_check_and_dry_run() -> None:
    make_identity("dora", project="demo", roles=["member"])
    make_identity("admin", project="admin", roles=["admin"])
    assert "denied (default admin)" in run("check", RULE, "--user", "dora", "--project", "demo")
    assert "allowed by its default" in run("check", RULE, "--user", "admin", "--project", "admin")
    assert "(dry run)" in run("grant", RULE, "--user", "dora", "--dry-run")
    assert policy.grants_of(RULE) == []
    run("grant", RULE, "--user", "dora")
    assert "allowed by a grant" in run("check", RULE, "--user", "dora", "--project", "demo")
    assert "denied" in run("check", "os_compute_api:servers:create", "--user", "dora", "--project", "demo",
                           "--target-project", "admin")


def test_token_flush_keeps_live_tokens() -> None:
    from datetime import timedelta

    from django.utils import timezone

    from identity.models import Token
    from identity.services.tokens import token_issue

    user, project = make_identity("erin", project="demo", roles=["member"])
    live = token_issue(user=user, project=project)
    old = token_issue(user=user, project=project)
    Token.objects.filter(id_hash=old.id_hash).update(expires_at=timezone.now() - timedelta(hours=2))
    out = StringIO()
    call_command("token_flush", "--dry-run", stdout=out)
    assert "1 expired" in out.getvalue()
    call_command("token_flush", stdout=StringIO())
    assert list(Token.objects.values_list("id_hash", flat=True)) == [live.id_hash]

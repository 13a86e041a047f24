"""The project manager persona (Nova's defaults since 2025.2, Keystone's ``manager`` role): a
manager of a project moves its servers (cold and live migration, the scheduler choosing the host),
follows and steers a live migration in progress (list, force complete, abort) and lists its
project's migrations, asking for them by project, without ever seeing a host's name; naming a
host, every project's migrations and the hosts stay the admin's."""
from __future__ import annotations

from typing import Any

import pytest

from tests.cloud import Cloud

from .moves import migration_of, other
from .test_live_migration import deliver, held

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])

HOST_FIELDS = ("source_node", "source_compute", "dest_node", "dest_compute", "dest_host")


def forbidden(answer: Any, rule: str) -> bool:
    return answer.status_code == 403 and answer.json()["forbidden"]["message"] == (
        f"Policy doesn't allow {rule} to be performed.")


def member_server(cloud: Cloud) -> tuple[Any, dict[str, Any], str]:
    """(the member's client, its ACTIVE server in az1 as the admin sees it, the server's host)."""
    member = cloud.member()
    server = cloud.create_server(member, "own", availability_zone="az1")
    cloud.wait_for_status(member, server["id"], "ACTIVE")
    shown = cloud.show(cloud.admin(), server["id"])
    return member, shown, shown["OS-EXT-SRV-ATTR:host"]


def test_a_manager_live_migrates_a_server_of_its_project_without_seeing_hosts(
        cloud: Cloud, monkeypatch: Any) -> None:
    # given a member's server and a manager of the same project
    member, server, source = member_server(cloud)
    sid, admin = server["id"], cloud.admin()
    manager = cloud.member("boss", roles=("manager",))
    project_id = server["tenant_id"]
    # when the manager live-migrates it, the scheduler choosing (the host not done yet)
    kept = held(monkeypatch, "live_migration")
    answer = cloud.action(manager, sid, {"os-migrateLive": {"host": None, "block_migration": "auto"}},
                          version="2.80")
    assert answer.status_code == 202
    # then the manager sees the migration in progress, its hosts null (the admin sees them)
    listed = cloud.get(manager, f"servers/{sid}/migrations", version="2.80").json()["migrations"]
    assert [m["status"] for m in listed] == ["running"] and listed[0]["project_id"] == project_id
    assert all(listed[0][name] is None for name in HOST_FIELDS)
    seen = cloud.get(admin, f"servers/{sid}/migrations", version="2.80").json()["migrations"][0]
    assert (seen["source_compute"], seen["dest_compute"]) == (source, other(source))
    assert set(seen) == set(listed[0])
    # one migration by id stays the admin's
    mid = listed[0]["id"]
    assert forbidden(cloud.get(manager, f"servers/{sid}/migrations/{mid}", version="2.80"),
                     "os_compute_api:servers:migrations:show")
    # the manager forces it to complete, and the server ends on the other host
    assert cloud.post(manager, f"servers/{sid}/migrations/{mid}/action", {"force_complete": None},
                      version="2.80").status_code == 202
    deliver(kept)
    assert cloud.show(admin, sid)["OS-EXT-SRV-ATTR:host"] == other(source)
    # the manager lists its project's migrations, asking for them by project (2.80), hosts null
    mine = cloud.get(manager, f"os-migrations?project_id={project_id}&migration_type=live-migration",
                     version="2.80").json()["migrations"]
    assert [(m["instance_uuid"], m["status"], m["project_id"]) for m in mine] == [(sid, "completed", project_id)]
    assert all(mine[0][name] is None for name in HOST_FIELDS)
    assert mine[0]["uuid"] == migration_of(cloud, sid)["uuid"]
    # and as Nova filters by it below 2.80 too, the same there
    older = cloud.get(manager, f"os-migrations?project_id={project_id}", version="2.23").json()["migrations"]
    assert [m["instance_uuid"] for m in older] == [sid] and older[0]["source_compute"] is None
    # every project's migrations, or another project's, are the admin's
    for query in ("", "?project_id=someone-else"):
        assert forbidden(cloud.get(manager, f"os-migrations{query}", version="2.80"),
                         "os_compute_api:os-migrations:index:all_projects")
    assert migration_of(cloud, sid)["source_compute"] == source


def test_naming_a_host_stays_the_admins(cloud: Cloud) -> None:
    # given a member's server and a manager of the same project
    member, server, source = member_server(cloud)
    sid = server["id"]
    manager = cloud.member("boss", roles=("manager",))
    # a live or cold migration to a named host: 403, naming the host's rule
    live = cloud.action(manager, sid, {"os-migrateLive": {"host": other(source), "block_migration": "auto"}},
                        version="2.30")
    assert forbidden(live, "os_compute_api:os-migrate-server:migrate_live:host")
    cold = cloud.action(manager, sid, {"migrate": {"host": other(source)}}, version="2.56")
    assert forbidden(cold, "os_compute_api:os-migrate-server:migrate:host")
    # a cold migration the scheduler places: 202, and the member confirms it
    assert cloud.action(manager, sid, {"migrate": None}).status_code == 202
    cloud.wait_for_status(member, sid, "VERIFY_RESIZE")
    assert cloud.action(member, sid, {"confirmResize": None}).status_code == 204
    assert cloud.show(cloud.admin(), sid)["OS-EXT-SRV-ATTR:host"] == other(source)


def test_a_member_and_another_projects_manager_may_not(cloud: Cloud) -> None:
    member, server, _source = member_server(cloud)
    sid = server["id"]
    # a member (no manager role): 403 for each of the manager's rules
    assert forbidden(cloud.action(member, sid, {"migrate": None}), "os_compute_api:os-migrate-server:migrate")
    assert forbidden(cloud.action(member, sid, {"os-migrateLive": {"host": None, "block_migration": "auto"}},
                                  version="2.30"), "os_compute_api:os-migrate-server:migrate_live")
    assert forbidden(cloud.get(member, f"servers/{sid}/migrations", version="2.80"),
                     "os_compute_api:servers:migrations:index")
    assert forbidden(cloud.get(member, f"os-migrations?project_id={server['tenant_id']}", version="2.80"),
                     "os_compute_api:os-migrations:index")
    # a manager of another project does not see the server at all
    stranger = cloud.member("other-boss", project="demo2", roles=("manager",))
    assert cloud.action(stranger, sid, {"migrate": None}).status_code == 404
    assert cloud.get(stranger, f"servers/{sid}/migrations", version="2.80").status_code == 404

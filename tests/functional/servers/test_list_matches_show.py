"""A detail list page reads only the columns its microversion shows (``presenter.list_columns``)
and renders its rows with per-page plans; ``GET /servers/{id}`` reads the whole row. Both must give
the same body for every server (but ``server_groups``, which Nova shows only in a show), whatever
the microversion, the reader's role and the page: the show is the reference rendering."""
from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])

VERSIONS = ("2.1", "2.3", "2.9", "2.16", "2.19", "2.26", "2.47", "2.63", "2.73", "2.90", "2.96", "2.98",
            "2.100", "latest")


def _varied_servers(cloud: Any, client: Any) -> None:
    """Servers with ports, tags, metadata, key, access IPs, a group, stopped, locked, errored with a
    fault, with attached volumes, with image properties, and one not yet in a cell."""
    from cells.context import target_cell
    from cells.models import InstanceMapping
    from identity.models import Project
    from servers.models import BlockDeviceMapping, BuildRequest, Instance, InstanceFault

    assert cloud.post(client, "os-keypairs", {"keypair": {"name": "kp"}}).status_code in (200, 201)
    group = cloud.post(client, "os-server-groups", {"server_group": {"name": "g", "policies": ["affinity"]}})
    made = []
    for i in range(6):
        fields: dict[str, Any] = {"tags": [f"t{i}", "common"]} if i % 2 == 0 else {}
        if i == 1:
            fields.update(key_name="kp", metadata={"b": "2", "a": "1"}, accessIPv4="10.1.2.3",
                          accessIPv6="0000:0000::babe:220.12.22.2", description="described")
        made.append(cloud.create_server(
            client, f"vm-{i}", networks="demo-net" if i % 2 == 0 else "none", version="2.100",
            availability_zone="az1" if i % 2 else "az2",
            hints={"group": group.json()["server_group"]["id"]} if i == 2 else None, **fields)["id"])
    assert cloud.action(client, made[3], {"os-stop": None}).status_code == 202
    assert cloud.action(client, made[4], {"lock": {"locked_reason": "mine"}}, version="2.73").status_code == 202
    with target_cell(cloud.cell_of(made[5])):
        Instance.objects.filter(uuid=made[5]).update(vm_state="error", task_state=None, trusted_certs=["c1"],
                                                     system_metadata={"image_os_distro": "x"})
        InstanceFault.objects.create(instance_uuid=made[5], code=500, message="boom", details="trace")
    with target_cell(cloud.cell_of(made[1])):
        BlockDeviceMapping.objects.create(instance_uuid=made[1], source_type="volume", destination_type="volume",
                                          volume_id="v-1", delete_on_termination=True)
        Instance.objects.filter(uuid=made[1]).update(task_state="rebooting", progress=30)
    project = Project.objects.get(name="demo")
    building = BuildRequest.objects.create(
        instance_uuid="b" * 8 + "-0000-0000-0000-000000000000", project_id=project.id, tags=["bt"],
        instance={"display_name": "building", "project_id": project.id, "user_id": "u", "flavor": {"name": "x"}})
    InstanceMapping.objects.create(instance_uuid=building.instance_uuid, cell=None, project_id=project.id)


def test_every_listed_server_is_its_show_body(cloud: Any, settings: Any) -> None:
    # given varied servers of a project, a member, a reader and the cloud admin (hosts that stay up
    # however long the test takes: a host status turning DOWN between a list and a show is no bug)
    settings.SERVICE_DOWN_TIME = 24 * 3600
    member = cloud.member()
    _varied_servers(cloud, member)
    readers = {"member": (member, ""), "reader": (cloud.member("viewer", "demo", roles=("reader",)), ""),
               "admin": (cloud.admin(), "&all_tenants=1")}
    compared = 0
    for who, (client, extra) in readers.items():
        for version in VERSIONS:
            # when the detail list is read whole and page by page (two per page, with markers)
            whole = cloud.get(client, f"servers/detail?{extra}", version=version)
            assert whole.status_code == 200, whole.content
            listed = whole.json()["servers"]
            paged: list[dict[str, Any]] = []
            marker = ""
            while True:
                page = cloud.get(client, f"servers/detail?limit=2{marker}{extra}", version=version).json()
                paged += page["servers"]
                if "servers_links" not in page:
                    break
                marker = f"&marker={page['servers'][-1]['id']}"
            assert paged == listed
            assert len(listed) == 7, (who, version, [s["name"] for s in listed])
            # then each entry is the server's show body at that version, less server_groups
            for server in listed:
                shown = cloud.show(client, server["id"], version=version)
                shown.pop("server_groups", None)
                assert server == shown, (who, version, server["name"])
                assert list(server) == list(shown), (who, version, server["name"])  # same key order: same bytes
                compared += 1
    assert compared == 3 * len(VERSIONS) * 7

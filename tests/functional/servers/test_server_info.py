"""The server password, the topology (2.78) and the deprecated extension listing."""
from __future__ import annotations

import pytest

from cells.context import target_cell
from cells.models import InstanceMapping
from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def test_the_password_a_guest_posted_is_read_and_cleared(cloud: Cloud) -> None:
    client = cloud.member()
    server = cloud.wait_for_status(client, cloud.create_server(client)["id"], "ACTIVE")
    path = f"servers/{server['id']}/os-server-password"
    assert cloud.get(client, path).json() == {"password": ""}
    inst = cloud.instance(server["id"])
    with target_cell(InstanceMapping.objects.get(instance_uuid=server["id"]).cell):
        inst.system_metadata = {**inst.system_metadata, "password_0": "abc", "password_1": "def"}
        inst.save(update_fields=["system_metadata"])
    assert cloud.get(client, path).json() == {"password": "abcdef"}
    assert cloud.get(cloud.member("demo2", "demo2"), path).status_code == 404
    reader = cloud.member("reader", "demo", roles=("reader",))
    assert cloud.delete(reader, path).status_code == 403
    assert cloud.delete(client, path).status_code == 204
    assert cloud.get(client, path).json() == {"password": ""}
    assert cloud.instance(server["id"]).system_metadata["password_0"] == ""


def test_topology_exists_from_2_78(cloud: Cloud) -> None:
    client = cloud.member()
    server = cloud.create_server(client)
    path = f"servers/{server['id']}/topology"
    assert cloud.get(client, path, version="2.77").status_code == 404
    response = cloud.get(client, path, version="2.78")
    assert response.status_code == 200, response.content
    assert response.json() == {"nodes": [], "pagesize_kb": None}


def test_extensions_list_and_show(cloud: Cloud) -> None:
    client = cloud.member()
    listed = cloud.get(client, "extensions").json()["extensions"]
    aliases = {e["alias"] for e in listed}
    assert {"os-server-groups", "os-simple-tenant-usage", "os-keypairs"} <= aliases
    assert all(set(e) == {"alias", "name", "description", "links", "namespace", "updated"} for e in listed)
    assert cloud.get(client, "extensions/os-keypairs").json()["extension"]["name"] == "Keypairs"
    # what exists now is listed (Tempest looks for Hosts, and shows os-consoles)
    assert {"Hosts", "PauseServer", "RemoteConsoles", "TenantNetworks"} <= {e["name"] for e in listed}
    assert cloud.get(client, "extensions/os-consoles").json()["extension"]["alias"] == "os-consoles"
    assert cloud.get(client, "extensions/os-nothing").status_code == 404

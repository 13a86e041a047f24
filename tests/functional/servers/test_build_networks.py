"""Networks of a build: auto, none, a network with a fixed IP, a pre-created port; ports freed on delete."""
from __future__ import annotations

import pytest

from networks.models import IPAllocation, Port

ALL = ["default", "cell0", "cell1", "cell2"]
pytestmark = pytest.mark.django_db(databases=ALL)


def test_auto_none_fixed_ip_and_port(cloud):
    client = cloud.member()
    # auto: a port on the shared demo-net, first free address after the gateway
    auto = cloud.create_server(client, "auto", networks="auto", version="2.37")["id"]
    assert cloud.show(client, auto)["addresses"]["demo-net"][0]["addr"] == "10.0.0.2"
    # none: no port at all
    none = cloud.create_server(client, "none", networks="none", version="2.37")["id"]
    assert cloud.show(client, none)["addresses"] == {}
    assert not Port.objects.filter(device_id=none).exists()
    # a fixed IP on a network (with a tag at 2.32+)
    fixed = cloud.create_server(client, "fixed", networks=[{"uuid": cloud.network_id, "fixed_ip": "10.0.0.50",
                                                            "tag": "nic1"}])["id"]
    assert cloud.show(client, fixed)["addresses"]["demo-net"][0]["addr"] == "10.0.0.50"
    # a pre-created port is bound to the server
    from networks.models import Network

    port = Port.objects.create(network=Network.objects.get(id=cloud.network_id), project_id="demo",
                               mac_address="fa:16:3e:00:00:01")
    by_port = cloud.create_server(client, "port", networks=[{"port": port.id}])["id"]
    port.refresh_from_db()
    assert port.device_id == by_port and port.binding_host_id == cloud.instance(by_port).host
    # when deleted, the server's ports and addresses are freed
    assert cloud.delete(client, f"servers/{auto}").status_code == 204
    assert not Port.objects.filter(device_id=auto).exists()
    assert not IPAllocation.objects.filter(ip_address="10.0.0.2").exists()
    # and a port the user brought survives its server, unbound
    assert cloud.delete(client, f"servers/{by_port}").status_code == 204
    port.refresh_from_db()
    assert port.device_id == "" and port.binding_host_id == ""


def test_a_port_in_use_is_400(cloud):
    client = cloud.member()
    from networks.models import Network

    port = Port.objects.create(network=Network.objects.get(id=cloud.network_id), project_id="demo",
                               mac_address="fa:16:3e:00:00:02", device_id="someone-else")
    body = {"server": {"name": "x", "flavorRef": "1", "imageRef": cloud.image_id, "networks": [{"port": port.id}]}}
    response = cloud.post(client, "servers", body, version="2.37")
    assert response.status_code == 400 and "in use" in response.json()["badRequest"]["message"]


AMBIGUOUS = "Multiple possible networks found, use a Network ID to be more specific."


def test_no_network_named_needs_the_projects_one_network(cloud):
    from identity.models import Project
    from networks.models import Network

    client = cloud.member()
    project_id = Project.objects.get(name="demo").id
    # given the member's project has a network of its own besides the shared demo-net
    own = Network.objects.create(name="own-net", project_id=project_id)
    # when a server names none ("auto" at 2.37, or no networks before it), Nova's 409: which one?
    for networks, version in (("auto", "2.37"), (None, "2.36")):
        refused = cloud.create_server(client, "which", networks=networks, version=version, expect=409)
        assert refused == {"conflictingRequest": {"code": 409, "message": AMBIGUOUS}}
    # and a server that names one is built on it
    named = cloud.create_server(client, "named", networks=[{"uuid": own.id}], version="2.37")["id"]
    assert Port.objects.get(device_id=named).network_id == own.id
    # given a project with no network at all (none of its own, none shared)
    assert cloud.delete(client, f"servers/{named}").status_code == 204
    own.delete()
    Network.objects.filter(id=cloud.network_id).update(shared=False)
    # then "auto" is refused (no network is allocated for a project here), as Nova refuses it
    # when Neutron cannot allocate one
    refused = cloud.create_server(client, "auto", networks="auto", version="2.37", expect=400)
    assert refused["badRequest"]["message"] == f"Unable to automatically allocate a network for project {project_id}"
    # and no networks given before 2.37 builds a server with none, as before
    bare = cloud.create_server(client, "bare", networks=None, version="2.36")["id"]
    assert cloud.show(client, bare)["status"] == "ACTIVE" and cloud.show(client, bare)["addresses"] == {}

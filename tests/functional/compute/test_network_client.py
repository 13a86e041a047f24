"""The compute agent's networking goes through Neutron's HTTP API (``compute.clients.networks``): run
as the agent of cell1, any direct use of the network service's tables raises IsolationViolation."""
from __future__ import annotations

import pytest

from cells.context import target_cell
from cells.isolation import IsolationViolation, compute_agent
from cloudcore.core.context import RequestContext
from compute.build import allocate_networks, deallocate_networks
from compute.clients import networks as neutron
from networks import services
from networks.models import Port
from servers.models import Instance, VirtualInterface

pytestmark = pytest.mark.django_db(databases="__all__")

PROJECT = "proj-a"


@pytest.fixture
def net() -> dict[str, str]:
    owner = RequestContext(user_id="u", project_id=PROJECT, roles=["member", "reader"])
    network = services.network_create(owner, name="private")
    subnet = services.subnet_create(owner, network_id=network.id, cidr="10.20.0.0/28")
    user_port = services.port_create(owner, network_id=network.id, name="mine")
    return {"network_id": network.id, "subnet_id": subnet.id, "user_port": user_port.id}


def _instance(cell) -> Instance:
    with target_cell(cell):
        return Instance.objects.create(project_id=PROJECT, user_id="u", host="hostA", availability_zone="zone1")


def test_the_agent_cannot_reach_the_port_table_itself(cells, net):
    with compute_agent(cells["cell1"]), pytest.raises(IsolationViolation, match="Port"):
        Port.objects.filter(device_id="x").exists()


def test_build_and_delete_networking_of_an_agent_go_through_the_api(cells, net):
    instance = _instance(cells["cell1"])
    ctx = RequestContext(user_id="u", project_id=PROJECT)
    with compute_agent(cells["cell1"]), target_cell(cells["cell1"]):
        allocate_networks(ctx, instance, [{"network_id": net["network_id"], "fixed_ip": "10.20.0.9"},
                                          {"port_id": net["user_port"], "tag": "nic2"}])
        vifs = neutron.network_info(instance_uuid=instance.uuid)
        rows = list(VirtualInterface.objects.filter(instance_uuid=instance.uuid).order_by("id")
                    .values_list("port_id", "preserve_on_delete", "tag"))
    # the port made for the server is in its project, owned by it and bound to its host
    made = Port.objects.exclude(id=net["user_port"]).get(device_id=instance.uuid)
    assert (made.project_id, made.device_owner, made.binding_host_id, made.status) == (
        PROJECT, "compute:zone1", "hostA", "ACTIVE")
    assert [a.ip_address for a in made.fixed_ips.all()] == ["10.20.0.9"]
    assert [g.name for g in made.security_groups.all()] == ["default"]
    mine = Port.objects.get(id=net["user_port"])
    assert (mine.device_id, mine.binding_host_id, mine.status) == (instance.uuid, "hostA", "ACTIVE")
    # the cell records both, the user's port as one to keep
    assert rows == [(made.id, False, None), (net["user_port"], True, "nic2")]
    # network_info as the network service builds it, with each port's security groups for its filter
    assert [{k: v for k, v in vif.items() if k != "firewall"} for vif in vifs] == services.network_info(instance.uuid)
    assert [v["firewall"]["security_groups"] for v in vifs] == [
        [g.id for g in p.security_groups.all()] for p in (mine, made)]
    assert [v["id"] for v in vifs] == [mine.id, made.id]
    assert vifs[1]["ips"] == [{"address": "10.20.0.9", "type": "fixed", "version": 4, "floating_ips": []}]
    assert vifs[1]["network"]["label"] == "private"

    with compute_agent(cells["cell1"]), target_cell(cells["cell1"]):
        neutron.ports_rebind_host(instance_uuid=instance.uuid, host=None)
    assert set(Port.objects.filter(device_id=instance.uuid).values_list("binding_host_id", flat=True)) == {""}

    with compute_agent(cells["cell1"]), target_cell(cells["cell1"]):
        deallocate_networks(ctx, instance)
        assert not VirtualInterface.objects.filter(instance_uuid=instance.uuid).exists()
    # the port made for the server is gone, the user's is back to nobody's
    assert not Port.objects.filter(id=made.id).exists()
    mine.refresh_from_db()
    assert (mine.device_id, mine.device_owner, mine.binding_host_id, mine.status) == ("", "", "", "DOWN")


def test_auto_picks_the_projects_network_and_the_requested_groups(cells, net):
    owner = RequestContext(user_id="u", project_id=PROJECT, roles=["member", "reader"])
    from networks import secgroups

    web = secgroups.security_group_create(owner, name="web")
    instance = _instance(cells["cell1"])
    with compute_agent(cells["cell1"]), target_cell(cells["cell1"]):
        assert [n["id"] for n in neutron.networks_available(project_id=PROJECT)] == [net["network_id"]]
        allocate_networks(owner, instance, "auto", [web.id])
    port = Port.objects.get(device_id=instance.uuid)
    assert port.network_id == net["network_id"]
    assert [g.name for g in port.security_groups.all()] == ["web"]


def test_a_port_the_user_brought_is_owned_by_the_servers_zone(cells, net):
    # given a port the user made (no owner) and another they marked as some other zone's
    owner = RequestContext(user_id="u", project_id=PROJECT, roles=["member", "reader"])
    marked = services.port_create(owner, network_id=net["network_id"], name="marked", device_owner="compute:nova")
    instance = _instance(cells["cell1"])
    # when a server in zone1 is built on both
    with compute_agent(cells["cell1"]), target_cell(cells["cell1"]):
        allocate_networks(owner, instance, [{"port_id": net["user_port"]}, {"port_id": marked.id}])
    # then, as Nova, both are owned by the server's zone (they had no owner or compute:nova)
    assert set(Port.objects.filter(device_id=instance.uuid).values_list("device_owner", flat=True)) == {
        "compute:zone1"}


def test_a_port_of_another_server_is_refused(cells, net):
    services.port_bind(net["user_port"], "hostB", device_id="other-server")
    instance = _instance(cells["cell1"])
    with compute_agent(cells["cell1"]), target_cell(cells["cell1"]), pytest.raises(neutron.PortInUse):
        allocate_networks(RequestContext(user_id="u", project_id=PROJECT), instance, [{"port_id": net["user_port"]}])
    assert Port.objects.get(id=net["user_port"]).device_id == "other-server"


def test_bindings_for_a_move_through_the_api(cells, net):
    port = services.port_create_for_instance(RequestContext.system(), network_id=net["network_id"],
                                             instance_uuid="vm", host="src", fixed_ip=None, project_id=PROJECT)
    with compute_agent(cells["cell1"]):
        neutron.port_binding_create(port_id=port.id, host="dst")
        neutron.port_binding_activate(port_id=port.id, host="dst")
        neutron.port_binding_activate(port_id=port.id, host="dst")  # already active: fine
        neutron.port_binding_delete(port_id=port.id, host="src")
        neutron.port_binding_delete(port_id=port.id, host="src")  # gone already: fine
        bindings = neutron.port_bindings(port_id=port.id)
    assert [(b["host"], b["status"]) for b in bindings] == [("dst", "ACTIVE")]
    assert Port.objects.get(id=port.id).binding_host_id == "dst"

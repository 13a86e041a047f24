"""Nova's network proxy (/os-networks, up to 2.35) over the network service's networks."""
from __future__ import annotations

import pytest

from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


def test_list_and_show_in_nova_network_shape(cloud: Cloud) -> None:
    client, admin = cloud.member(), cloud.admin()
    net = cloud.post(client, "/network/v2.0/networks", {"network": {"name": "proxied"}}).json()["network"]
    cloud.post(client, "/network/v2.0/subnets", {"subnet": {"network_id": net["id"], "cidr": "10.9.0.0/24",
                                                           "ip_version": 4, "dns_nameservers": ["10.9.0.53"]}})
    listed = {n["label"]: n for n in cloud.get(client, "os-networks").json()["networks"]}
    shown = listed["proxied"]
    assert (shown["id"], shown["cidr"], shown["netmask"], shown["gateway"], shown["broadcast"], shown["dns1"]) == (
        net["id"], "10.9.0.0/24", "255.255.255.0", "10.9.0.1", "10.9.0.255", "10.9.0.53")
    assert "project_id" not in shown
    as_admin = cloud.get(admin, f"os-networks/{net['id']}").json()["network"]
    assert as_admin["label"] == "proxied" and as_admin["project_id"] == net["project_id"]
    missing = cloud.get(client, "os-networks/nope")
    assert missing.status_code == 404 and missing.json()["itemNotFound"]["message"] == "Network could not be found."
    assert cloud.post(admin, "os-networks", {"network": {"label": "x"}}).status_code == 410
    assert cloud.get(client, "os-networks", version="2.36").status_code == 404


def test_tenant_networks_list_and_show(cloud: Cloud) -> None:
    client, other = cloud.member(), cloud.member("demo2", "demo2")
    net = cloud.post(client, "/network/v2.0/networks", {"network": {"name": "mine"}}).json()["network"]
    cloud.post(client, "/network/v2.0/subnets", {"subnet": {"network_id": net["id"], "cidr": "10.8.0.0/24",
                                                           "ip_version": 4}})
    # the project's networks in the proxy's short shape: id, label, cidr, nothing else
    listed = {n["id"]: n for n in cloud.get(client, "os-tenant-networks").json()["networks"]}
    assert listed[net["id"]] == {"id": net["id"], "label": "mine", "cidr": "10.8.0.0/24"}
    shown = cloud.get(client, f"os-tenant-networks/{net['id']}").json()["network"]
    assert shown == listed[net["id"]]
    # another project neither lists nor shows it
    assert net["id"] not in {n["id"] for n in cloud.get(other, "os-tenant-networks").json()["networks"]}
    assert cloud.get(other, f"os-tenant-networks/{net['id']}").status_code == 404
    # the writes went with nova-network, and the whole proxy with 2.36
    assert cloud.post(client, "os-tenant-networks", {"network": {"label": "x"}}).status_code == 410
    assert cloud.get(client, "os-tenant-networks", version="2.36").status_code == 404

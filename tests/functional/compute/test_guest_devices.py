"""What a guest gets through the API on libvirt's test driver (cloudcore's own libvirt driver, as the
embedded default runs it): a config drive saying what the API says about the server (the
``libvirt_cloud`` fixture is in conftest.py)."""
from __future__ import annotations

import base64
import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from compute.virt.configdrive import read_config_drive
from compute.virt.libvirt import LibvirtDriver
from tests.cloud import Cloud

pytestmark = pytest.mark.django_db(databases="__all__")
PUBLIC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFSDIj1b61Zm/8oFq6rs4ssESlCX1P4s9wZtQhv5zI05 t@example"


def _domain_xml(cloud: Cloud, server: dict[str, Any]) -> tuple[LibvirtDriver, Any, ET.Element]:
    instance = cloud.instance(server["id"])
    driver: Any = cloud.driver(instance.host)
    return driver, instance, ET.fromstring(driver._domain(instance).XMLDesc(0))


def test_a_server_that_asks_gets_a_config_drive_with_its_key_and_user_data(libvirt_cloud: Cloud,
                                                                          settings: Any) -> None:
    # given a keypair and a server that asks for a config drive with user data
    settings.FORCE_CONFIG_DRIVE = False
    cloud, member = libvirt_cloud, libvirt_cloud.member()
    assert cloud.post(member, "os-keypairs", {"keypair": {"name": "k1", "public_key": PUBLIC_KEY}}).status_code == 200
    user_data = base64.b64encode(b"#!/bin/sh\necho USERDATA-MARKER\n").decode()
    server = cloud.create_server(member, "web-1", networks="demo-net", key_name="k1", user_data=user_data,
                                 config_drive=True)
    shown = cloud.wait_for_status(member, server["id"], "ACTIVE")
    # then its domain has the drive as a cdrom, and the drive says what the API says
    driver, instance, root = _domain_xml(cloud, server)
    (cdrom,) = root.findall("./devices/disk[@device='cdrom']")
    drive = Path(cdrom.find("source").get("file"))  # type: ignore[union-attr,arg-type]
    assert drive == driver.instance_dir(instance) / "disk.config"
    label, files = read_config_drive(drive)
    meta = json.loads(files["openstack/latest/meta_data.json"])
    assert label == "config-2" and shown["config_drive"] == "True"
    assert meta["uuid"] == server["id"] and meta["name"] == "web-1" and meta["hostname"] == instance.hostname
    assert meta["public_keys"] == {"k1": PUBLIC_KEY}
    assert meta["availability_zone"] == shown["OS-EXT-AZ:availability_zone"]
    assert meta["project_id"] == shown["tenant_id"]
    assert files["openstack/latest/user_data"] == b"#!/bin/sh\necho USERDATA-MARKER\n"
    (port_ip,) = [a["addr"] for a in shown["addresses"]["demo-net"]]
    (port_mac,) = [a["OS-EXT-IPS-MAC:mac_addr"] for a in shown["addresses"]["demo-net"]]
    net = json.loads(files["openstack/latest/network_data.json"])
    assert [link["ethernet_mac_address"] for link in net["links"]] == [port_mac]
    assert [n["ip_address"] for n in net["networks"]] == [port_ip]


def test_a_forced_config_drive_reaches_every_server_and_shows_in_the_api(libvirt_cloud: Cloud,
                                                                        settings: Any) -> None:
    # given the operator forces config drives
    settings.FORCE_CONFIG_DRIVE = True
    cloud, member = libvirt_cloud, libvirt_cloud.member()
    # when a server that did not ask for one is built
    server = cloud.create_server(member, "plain")
    shown = cloud.wait_for_status(member, server["id"], "ACTIVE")
    # then it has one, and the API says so
    _driver, _instance, root = _domain_xml(cloud, server)
    assert len(root.findall("./devices/disk[@device='cdrom']")) == 1
    assert shown["config_drive"] == "True"


def test_no_config_drive_unless_asked_or_forced(libvirt_cloud: Cloud, settings: Any) -> None:
    settings.FORCE_CONFIG_DRIVE = False
    cloud, member = libvirt_cloud, libvirt_cloud.member()
    server = cloud.create_server(member, "plain")
    shown = cloud.wait_for_status(member, server["id"], "ACTIVE")
    _driver, _instance, root = _domain_xml(cloud, server)
    assert root.findall("./devices/disk[@device='cdrom']") == [] and shown["config_drive"] == ""


def test_each_port_is_a_nic_with_its_mac_on_the_networks_libvirt_network(libvirt_cloud: Cloud,
                                                                        settings: Any) -> None:
    # given a server on demo-net
    settings.FORCE_CONFIG_DRIVE = False
    cloud, member = libvirt_cloud, libvirt_cloud.member()
    server = cloud.create_server(member, "nic", networks="demo-net")
    shown = cloud.wait_for_status(member, server["id"], "ACTIVE")
    # then its domain has one NIC, with the port's MAC, on demo-net's isolated libvirt network
    driver, _instance, root = _domain_xml(cloud, server)
    nics = root.findall("./devices/interface[@type='network']")
    (port_mac,) = [a["OS-EXT-IPS-MAC:mac_addr"] for a in shown["addresses"]["demo-net"]]
    assert [(n.find("mac").get("address"), n.find("source").get("network"))  # type: ignore[union-attr]
            for n in nics] == [(port_mac, f"cloudcore-{cloud.network_id}")]
    network = ET.fromstring(driver.conn.networkLookupByName(f"cloudcore-{cloud.network_id}").XMLDesc(0))
    assert network.find("forward") is None and network.find("ip") is None

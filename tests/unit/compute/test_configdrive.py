"""The config drive's content (built from what the API says about the server) and how the libvirt
driver attaches it, on libvirt's test driver."""
from __future__ import annotations

import base64
import json
import uuid
import xml.etree.ElementTree as ET
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from compute.virt.configdrive import (
    config_drive_files,
    config_drive_required,
    read_config_drive,
    write_config_drive,
)
from compute.virt.libvirt import LibvirtDriver, write_test_node

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIConfigDriveKey demo@cloudcore"
VIF = {"id": "4c1a7e0e-1111-2222-3333-444455556666", "address": "fa:16:3e:12:34:56",
       "network": {"id": "net-1", "label": "demo-net", "mtu": 1450, "subnets": [
           {"cidr": "10.0.0.0/24", "gateway": "10.0.0.1",
            "ips": [{"address": "10.0.0.7", "type": "fixed", "version": 4, "floating_ips": []}]}]}}


def server(**kw: Any) -> SimpleNamespace:
    fields: dict[str, Any] = {
        "uuid": str(uuid.uuid4()), "memory_mb": 128, "vcpus": 1, "display_name": "web 1", "hostname": "web-1",
        "key_name": "demo-key", "key_data": KEY, "availability_zone": "az1", "project_id": "proj-1",
        "launch_index": 2, "metadata": {"role": "web"}, "config_drive": "True",
        "user_data": base64.b64encode(b"#cloud-config\n# USERDATA-MARKER\n").decode(),
    }
    fields.update(kw)
    return SimpleNamespace(**fields)


def test_the_drive_says_what_the_api_says(tmp_path: Path) -> None:
    # given a server with a key, user data and one port
    inst = server()
    # when its drive is written and read back as an ISO
    label, files = read_config_drive(write_config_drive(config_drive_files(inst, [VIF]), tmp_path / "disk.config"))
    # then it is labelled config-2 and holds OpenStack's files under openstack/latest
    assert label == "config-2"
    assert set(files) == {f"openstack/latest/{n}" for n in (
        "meta_data.json", "network_data.json", "vendor_data.json", "vendor_data2.json", "user_data")}
    meta = json.loads(files["openstack/latest/meta_data.json"])
    assert meta["uuid"] == inst.uuid and meta["name"] == "web 1" and meta["hostname"] == "web-1"
    assert meta["public_keys"] == {"demo-key": KEY}
    assert meta["keys"] == [{"name": "demo-key", "type": "ssh", "data": KEY}]
    assert (meta["availability_zone"], meta["project_id"], meta["launch_index"]) == ("az1", "proj-1", 2)
    assert meta["meta"] == {"role": "web"}
    assert files["openstack/latest/user_data"] == b"#cloud-config\n# USERDATA-MARKER\n"  # decoded
    assert json.loads(files["openstack/latest/vendor_data2.json"]) == {}
    net = json.loads(files["openstack/latest/network_data.json"])
    assert net["links"] == [{"id": "tap4c1a7e0e-11", "vif_id": VIF["id"], "type": "phy", "mtu": 1450,
                             "ethernet_mac_address": "fa:16:3e:12:34:56"}]
    assert net["networks"] == [{"id": "network0", "type": "ipv4", "link": "tap4c1a7e0e-11", "ip_address": "10.0.0.7",
                                "netmask": "255.255.255.0", "network_id": "net-1", "services": [],
                                "routes": [{"network": "0.0.0.0", "netmask": "0.0.0.0", "gateway": "10.0.0.1"}]}]


def test_no_key_and_no_user_data_leave_them_out(tmp_path: Path) -> None:
    files = config_drive_files(server(key_name=None, key_data=None, user_data=None), [])
    assert "openstack/latest/user_data" not in files
    meta = json.loads(files["openstack/latest/meta_data.json"])
    assert meta["public_keys"] == {} and meta["keys"] == []
    assert json.loads(files["openstack/latest/network_data.json"]) == {"links": [], "networks": [], "services": []}


def test_a_drive_when_asked_for_or_forced(settings: Any) -> None:
    settings.FORCE_CONFIG_DRIVE = False
    assert config_drive_required(server(config_drive="True"))
    assert not config_drive_required(server(config_drive=""))
    settings.FORCE_CONFIG_DRIVE = True
    assert config_drive_required(server(config_drive=""))


def _driver(tmp_path: Path) -> LibvirtDriver:
    node = write_test_node(tmp_path / "h1", hostname="h1", vcpus=4, memory_mb=4096, disk_gb=20)
    return LibvirtDriver(host="h1", uri=f"test://{node}", state_path=tmp_path / "h1")


def _cdroms(driver: LibvirtDriver, inst: Any) -> list[ET.Element]:
    root = ET.fromstring(driver._domain(inst).XMLDesc(0))
    return root.findall("./devices/disk[@device='cdrom']")


def test_the_test_driver_attaches_the_drive_as_a_readonly_cdrom(tmp_path: Path, settings: Any) -> None:
    # given a host and a server that asks for a drive, and one that does not
    settings.FORCE_CONFIG_DRIVE = False
    d = _driver(tmp_path)
    asked, plain = server(), server(config_drive="")
    # when both are spawned
    d.spawn(instance=asked, image_meta=None, network_info=[VIF])
    d.spawn(instance=plain, image_meta=None, network_info=[])
    # then only the first has a cdrom, the instance directory's disk.config, read-only
    (cdrom,) = _cdroms(d, asked)
    drive = d.instance_dir(asked) / "disk.config"
    assert cdrom.find("source").get("file") == str(drive)  # type: ignore[union-attr]
    assert cdrom.find("readonly") is not None and cdrom.find("target").get("bus") == "ide"  # type: ignore[union-attr]
    label, files = read_config_drive(drive)
    assert label == "config-2" and json.loads(files["openstack/latest/meta_data.json"])["uuid"] == asked.uuid
    assert _cdroms(d, plain) == [] and not (d.instance_dir(plain) / "disk.config").exists()
    # and a forced drive reaches a server that did not ask, on its next spawn
    settings.FORCE_CONFIG_DRIVE = True
    d.spawn(instance=plain, image_meta=None, network_info=[])
    assert len(_cdroms(d, plain)) == 1


def test_a_nic_per_port_on_an_isolated_network_of_the_host(tmp_path: Path) -> None:
    # given a host and two servers with a port each on one cloudcore network, one with two ports
    d = _driver(tmp_path)
    other_net = {"id": "net-2", "label": "other", "mtu": None, "subnets": []}
    second = {"id": "9d0e8f7a-0000-1111-2222-333344445555", "address": "fa:16:3e:00:00:02", "network": other_net}
    third = {**VIF, "id": "aaaabbbb-cccc-dddd-eeee-ffff00001111", "address": "fa:16:3e:00:00:03"}
    one, two = server(config_drive=""), server(config_drive="")
    # when they are spawned
    d.spawn(instance=one, image_meta=None, network_info=[VIF, second])
    d.spawn(instance=two, image_meta=None, network_info=[third])
    # then each port is a virtio NIC with its MAC on its network's libvirt network
    nics = ET.fromstring(d._domain(one).XMLDesc(0)).findall("./devices/interface[@type='network']")
    assert [(n.find("mac").get("address"), n.find("source").get("network"),  # type: ignore[union-attr]
             n.find("model").get("type")) for n in nics] == [  # type: ignore[union-attr]
        ("fa:16:3e:12:34:56", "cloudcore-net-1", "virtio"), ("fa:16:3e:00:00:02", "cloudcore-net-2", "virtio")]
    (nic,) = ET.fromstring(d._domain(two).XMLDesc(0)).findall("./devices/interface[@type='network']")
    assert nic.find("source").get("network") == "cloudcore-net-1"  # type: ignore[union-attr]
    # and the host defined one network per cloudcore network: started, autostarted, isolated
    names = sorted(n.name() for n in d.conn.listAllNetworks() if n.name().startswith("cloudcore-"))
    assert names == ["cloudcore-net-1", "cloudcore-net-2"]
    network = d.conn.networkLookupByName("cloudcore-net-1")
    assert network.isActive() and network.autostart()
    net_xml = ET.fromstring(network.XMLDesc(0))
    assert net_xml.find("forward") is None and net_xml.find("ip") is None
    assert net_xml.find("bridge").get("name") == "ccbrnet1"  # type: ignore[union-attr]
    assert net_xml.find("mtu").get("size") == "1450"  # type: ignore[union-attr]

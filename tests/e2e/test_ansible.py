"""A first Ansible playbook, as a new user writes it with the ``openstack.cloud`` collection, run
with ``ansible-playbook`` against the live cloud: a key pair, an anti-affinity server group and two
servers in it (on different hosts), a project quota, pause and resume, then a clean teardown
(run twice: the second run must change nothing, and deleting what is gone must succeed).
A second one: a security group with a rule, a volume, a server in the group that gets a floating
IP as the server module gives one by default (``auto_ip``), the volume attached to it and a
snapshot of it; run again it changes nothing, and its teardown leaves no floating IP behind.
A third one with the modules the first two do not use: as the cloud admin a private flavor with
extra specs and its access for the demo project, a host aggregate, the demo project's quota, a
project with a user and a role in it; as the demo user an image uploaded from a raw file with
properties, a volume made from it and a server booted from that volume and taken through
server_action's actions (stop to unshelve), its metadata, a second volume attached, the info
modules with filters, a router to the external network with an interface on a subnet of our own,
and a port with a fixed IP and a security group that a second server boots on.

The collection comes from the ``ansible`` wheel (``scripts/fetch_ansible_collection.py``, run by
``make venv``); the modules run on this machine with the project's Python and its openstacksdk.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .cloud import LiveCloud
from .test_cli_quotas import limits

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

COLLECTIONS = Path(sys.prefix)
PLAYBOOK = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    cloud: cloudcore-demo
  tasks:
    - name: a key pair
      openstack.cloud.keypair:
        cloud: "{{ cloud }}"
        name: ans-key
      register: key

    - name: an anti-affinity server group
      openstack.cloud.server_group:
        cloud: "{{ cloud }}"
        name: ans-spread
        policy: anti-affinity
      register: group

    - name: two servers in it
      openstack.cloud.server:
        cloud: "{{ cloud }}"
        name: "{{ item }}"
        image: tiny
        flavor: m1.tiny
        network: demo-net
        key_name: ans-key
        auto_ip: false
        scheduler_hints:
          group: "{{ group.server_group.id }}"
        wait: true
        timeout: 240
      loop: [ans-1, ans-2]
      register: servers

    - name: a project quota (as the cloud admin)
      openstack.cloud.quota:
        cloud: cloudcore-admin
        name: "{{ servers.results[0].server.project_id }}"
        instances: 12
        key_pairs: 40

    - name: pause the first server
      openstack.cloud.server_action:
        cloud: "{{ cloud }}"
        server: ans-1
        action: pause

    - name: and resume it
      openstack.cloud.server_action:
        cloud: "{{ cloud }}"
        server: ans-1
        action: unpause
"""
TEARDOWN = """
- hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: the servers go
      openstack.cloud.server:
        cloud: cloudcore-demo
        name: "{{ item }}"
        state: absent
        wait: true
      loop: [ans-1, ans-2]
    - name: the group goes
      openstack.cloud.server_group:
        cloud: cloudcore-demo
        name: ans-spread
        state: absent
    - name: the key pair goes
      openstack.cloud.keypair:
        cloud: cloudcore-demo
        name: ans-key
        state: absent
    - name: the project's quotas go back to the defaults
      openstack.cloud.quota:
        cloud: cloudcore-admin
        name: "{{ project }}"
        state: absent
"""

WEB = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    cloud: cloudcore-demo
  tasks:
    - name: a security group
      openstack.cloud.security_group:
        cloud: "{{ cloud }}"
        name: ans-web
        description: web servers
    - name: ssh allowed in
      openstack.cloud.security_group_rule:
        cloud: "{{ cloud }}"
        security_group: ans-web
        protocol: tcp
        port_range_min: 22
        port_range_max: 22
        remote_ip_prefix: 0.0.0.0/0
    - name: a volume
      openstack.cloud.volume:
        cloud: "{{ cloud }}"
        name: ans-data
        size: 1
    - name: a server in the group, with a floating IP (auto_ip by default)
      openstack.cloud.server:
        cloud: "{{ cloud }}"
        name: ans-web-1
        image: tiny
        flavor: m1.tiny
        network: demo-net
        security_groups: [default, ans-web]
        wait: true
        timeout: 240
    - name: the volume attached to it
      openstack.cloud.server_volume:
        cloud: "{{ cloud }}"
        server: ans-web-1
        volume: ans-data
    - name: a snapshot of the attached volume
      openstack.cloud.volume_snapshot:
        cloud: "{{ cloud }}"
        volume: ans-data
        name: ans-data-snap
        force: true
        wait: true
"""
WEB_TEARDOWN = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    cloud: cloudcore-demo
  tasks:
    - openstack.cloud.volume_snapshot: {cloud: "{{ cloud }}", volume: ans-data, name: ans-data-snap, state: absent,
                                        wait: true}
    - openstack.cloud.server: {cloud: "{{ cloud }}", name: ans-web-1, state: absent, wait: true, delete_ips: true}
    - openstack.cloud.volume: {cloud: "{{ cloud }}", name: ans-data, state: absent, wait: true}
    - openstack.cloud.security_group: {cloud: "{{ cloud }}", name: ans-web, state: absent}
"""

#: where the module's own behaviour is in the way (not the cloud's): the server module owns a
#: server's whole metadata, so it states what server_metadata adds; the actions change a server
#: whatever state it is in, so they run once, on the server just made; port compares fixed_ips
#: whole, so the subnet is given with the address; image_info filters on the image's attributes
#: on the client side (no ``tag``)
OPS = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    admin: cloudcore-admin
  tasks:
    - name: a private flavor with extra specs
      openstack.cloud.compute_flavor:
        cloud: "{{ admin }}"
        name: ans3.private
        vcpus: 1
        ram: 512
        disk: 1
        is_public: false
        extra_specs:
          "hw:cpu_policy": shared
          "quota:disk_read_bytes_sec": "10240000"
    - name: the demo project may use it
      openstack.cloud.compute_flavor_access:
        cloud: "{{ admin }}"
        name: ans3.private
        project: demo
    - name: an aggregate of two hosts with metadata
      openstack.cloud.host_aggregate:
        cloud: "{{ admin }}"
        name: ans3-agg
        hosts: [compute1, compute2]
        metadata:
          ssd: "true"
    - name: the demo project's quota
      openstack.cloud.quota:
        cloud: "{{ admin }}"
        name: demo
        instances: 15
        cores: 30
        volumes: 15
        gigabytes: 200
        port: 60
    - name: a project
      openstack.cloud.project:
        cloud: "{{ admin }}"
        name: ans3-proj
        description: a third playbook's project
    - name: a user in it
      openstack.cloud.identity_user:
        cloud: "{{ admin }}"
        name: ans3-user
        password: "ans3-secret"
        default_project: ans3-proj
        email: ans3@example.com
    - name: a member of it
      openstack.cloud.role_assignment:
        cloud: "{{ admin }}"
        user: ans3-user
        project: ans3-proj
        role: member

- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    cloud: cloudcore-demo
  tasks:
    - name: an image uploaded from a small raw file, with properties
      openstack.cloud.image:
        cloud: "{{ cloud }}"
        name: ans3-img
        filename: "{{ playbook_dir }}/disk.raw"
        disk_format: raw
        container_format: bare
        min_disk: 1
        properties:
          os_distro: cirros
          hw_disk_bus: virtio
        tags: [ans3]
    - name: a volume from that image
      openstack.cloud.volume:
        cloud: "{{ cloud }}"
        name: ans3-boot
        size: 1
        image: ans3-img
        is_bootable: true
        metadata:
          purpose: root
        wait: true
    - name: a server booted from it, on the private flavor
      openstack.cloud.server:
        cloud: "{{ cloud }}"
        name: ans3-bfv
        flavor: ans3.private
        boot_volume: ans3-boot
        terminate_volume: false
        network: demo-net
        security_groups: [default]
        auto_ip: false
        # the server module owns the server's whole metadata (it removes keys it is not given), so
        # it states what server_metadata below adds too
        metadata:
          role: bfv
          owner: ops
          tier: db
        wait: true
        timeout: 240
      register: bfv
    - name: "{{ item }} the server"
      openstack.cloud.server_action:
        cloud: "{{ cloud }}"
        server: ans3-bfv
        action: "{{ item }}"
        image: "{{ (item == 'rebuild') | ternary('ans3-img', omit) }}"
        timeout: 240
      when: bfv is changed  # actions are no state: run once, on the server just made
      loop: [stop, start, pause, unpause, suspend, resume, lock, unlock, rebuild, shelve, shelve_offload, unshelve]
    - name: metadata on the server
      openstack.cloud.server_metadata:
        cloud: "{{ cloud }}"
        server: ans3-bfv
        metadata:
          owner: ops
          tier: db
    - name: a data volume
      openstack.cloud.volume:
        cloud: "{{ cloud }}"
        name: ans3-data
        size: 1
        wait: true
    - name: attached to the server
      openstack.cloud.server_volume:
        cloud: "{{ cloud }}"
        server: ans3-bfv
        volume: ans3-data
        wait: true
    - name: the server, found by its name and a filter
      openstack.cloud.server_info:
        cloud: "{{ cloud }}"
        name: ans3-bfv
        filters:
          vm_state: active
      register: found
    - name: the private flavor, found by its filters
      openstack.cloud.compute_flavor_info:
        cloud: "{{ cloud }}"
        name: ans3.private
        vcpus: 1
        ram: ">=512"
      register: flavors
    - name: the image, found by its properties
      openstack.cloud.image_info:
        cloud: "{{ cloud }}"
        filters:
          os_distro: cirros
          disk_format: raw
      register: images
    - name: the volumes, filtered by status
      openstack.cloud.volume_info:
        cloud: "{{ cloud }}"
        name: ans3-data
        status: in-use
        details: true
      register: volumes
    - name: what the info modules found
      ansible.builtin.assert:
        that:
          - found.servers | length == 1
          - found.servers[0].metadata.owner == 'ops'
          - found.servers[0].metadata.role == 'bfv'
          - found.servers[0].volumes | map(attribute='id') | list | length == 2
          - flavors.flavors | map(attribute='name') | list == ['ans3.private']
          - flavors.flavors[0].extra_specs['hw:cpu_policy'] == 'shared'
          - images.images | map(attribute='name') | list == ['ans3-img']
          - volumes.volumes | map(attribute='name') | list == ['ans3-data']
    - name: a network of our own
      openstack.cloud.network:
        cloud: "{{ cloud }}"
        name: ans3-net
    - name: its subnet
      openstack.cloud.subnet:
        cloud: "{{ cloud }}"
        name: ans3-sub
        network_name: ans3-net
        cidr: 192.168.53.0/24
        gateway_ip: 192.168.53.1
      register: subnet
    - name: a router to the outside, with an interface on the subnet
      openstack.cloud.router:
        cloud: "{{ cloud }}"
        name: ans3-router
        network: public
        interfaces:
          - ans3-sub
    - name: a security group for the port
      openstack.cloud.security_group:
        cloud: "{{ cloud }}"
        name: ans3-sg
        description: the port's group
    - name: a port with a fixed IP and the group
      openstack.cloud.port:
        cloud: "{{ cloud }}"
        name: ans3-port
        network: ans3-net
        fixed_ips:
          # the module compares the list whole: with the subnet, as Neutron gives it back
          - ip_address: 192.168.53.20
            subnet_id: "{{ subnet.subnet.id }}"
        security_groups: [ans3-sg]
    - name: a server on that port
      openstack.cloud.server:
        cloud: "{{ cloud }}"
        name: ans3-onport
        image: ans3-img
        flavor: m1.tiny
        nics:
          - port-name: ans3-port
        security_groups: [ans3-sg]
        auto_ip: false
        wait: true
        timeout: 240
"""
#: server_volume, compute_flavor_access and role_assignment fail on a server, flavor or user that
#: is gone: the first two are skipped then, the last left out (deleting the user ends its roles)
OPS_TEARDOWN = """
- hosts: localhost
  connection: local
  gather_facts: false
  vars:
    cloud: cloudcore-demo
    admin: cloudcore-admin
  tasks:
    - openstack.cloud.server: {cloud: "{{ cloud }}", name: ans3-onport, state: absent, wait: true}
    - openstack.cloud.port: {cloud: "{{ cloud }}", name: ans3-port, state: absent}
    - openstack.cloud.security_group: {cloud: "{{ cloud }}", name: ans3-sg, state: absent}
    - openstack.cloud.router: {cloud: "{{ cloud }}", name: ans3-router, state: absent}
    - openstack.cloud.subnet: {cloud: "{{ cloud }}", name: ans3-sub, state: absent}
    - openstack.cloud.network: {cloud: "{{ cloud }}", name: ans3-net, state: absent}
    - openstack.cloud.server_info: {cloud: "{{ cloud }}", name: ans3-bfv}
      register: left
    # the module fails on a server that is gone (it looks the server up first)
    - openstack.cloud.server_volume: {cloud: "{{ cloud }}", server: ans3-bfv, volume: ans3-data, state: absent,
                                      wait: true}
      when: left.servers | length > 0
    - openstack.cloud.volume: {cloud: "{{ cloud }}", name: ans3-data, state: absent, wait: true}
    - openstack.cloud.server: {cloud: "{{ cloud }}", name: ans3-bfv, state: absent, wait: true}
    - openstack.cloud.volume: {cloud: "{{ cloud }}", name: ans3-boot, state: absent, wait: true}
    - openstack.cloud.image: {cloud: "{{ cloud }}", name: ans3-img, state: absent}
    # (no role_assignment absent: the module fails once the user is gone; deleting the user ends its assignments)
    - openstack.cloud.identity_user: {cloud: "{{ admin }}", name: ans3-user, state: absent}
    - openstack.cloud.project: {cloud: "{{ admin }}", name: ans3-proj, state: absent}
    - openstack.cloud.quota: {cloud: "{{ admin }}", name: demo, state: absent}
    - openstack.cloud.host_aggregate: {cloud: "{{ admin }}", name: ans3-agg, state: absent}
    - openstack.cloud.compute_flavor_info: {cloud: "{{ admin }}", name: ans3.private}
      register: flavor_left
    # the module fails on a flavor that is gone
    - openstack.cloud.compute_flavor_access: {cloud: "{{ admin }}", name: ans3.private, project: demo, state: absent}
      when: flavor_left.flavors | length > 0
    - openstack.cloud.compute_flavor: {cloud: "{{ admin }}", name: ans3.private, state: absent}
"""


def _interpreter(tmp_path: Path) -> Path:
    """The project's Python for the modules, with ``openstack.version`` imported first.

    openstack.cloud 2.5.0 (the newest the ``ansible`` package carries for Python 3.11) reads
    ``openstack.version.__version__`` without importing that submodule, which openstacksdk 4.15
    and later no longer import on ``import openstack``: every module then fails with
    "module 'openstack' has no attribute 'version'" (fixed in openstack.cloud 2.6.0). Users of
    this cloud with the same pair of versions meet the same failure; the cure is not ours.
    """
    wrapper = tmp_path / "python-for-ansible"
    wrapper.write_text(f"""#!/bin/sh
exec {sys.executable} -c 'import openstack.version, runpy, sys; sys.argv = sys.argv[1:]; \\
runpy.run_path(sys.argv[0], run_name="__main__")' "$@"
""")
    wrapper.chmod(0o755)
    return wrapper


def run_playbook(cloud: LiveCloud, tmp_path: Path, text: str, name: str, **extra_vars: str) -> int:
    """Run one playbook; the number of tasks that changed something (its recap), failing with its
    output."""
    playbook = tmp_path / f"{name}.yml"
    playbook.write_text(text)
    env = {key: value for key, value in os.environ.items() if not key.startswith("OS_")}
    env.update({
        "OS_CLIENT_CONFIG_FILE": str(cloud.clouds_yaml),
        "ANSIBLE_COLLECTIONS_PATH": str(COLLECTIONS),
        "ANSIBLE_NOCOLOR": "true",
        "ANSIBLE_PYTHON_INTERPRETER": str(_interpreter(tmp_path)),
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"),
        "ANSIBLE_HOME": str(tmp_path / "ansible-home"),
        "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false",
        "ANSIBLE_LOCALHOST_WARNING": "false",
    })
    exe = Path(sys.executable).parent / "ansible-playbook"
    extra = [arg for key, value in extra_vars.items() for arg in ("-e", f"{key}={value}")]
    result = subprocess.run([str(exe), "-i", "localhost,", *extra, str(playbook)], env=env, capture_output=True,
                            text=True, timeout=900)
    assert result.returncode == 0, f"{name} failed:\n{result.stdout[-6000:]}\n{result.stderr[-3000:]}"
    recap = re.search(r"localhost\s*:.*\bchanged=(\d+)", result.stdout)
    assert recap, result.stdout[-3000:]
    return int(recap.group(1))


def test_a_first_playbook(live_cloud: LiveCloud, tmp_path: Path) -> None:
    cloud = live_cloud
    assert run_playbook(cloud, tmp_path, PLAYBOOK, "site") > 0
    ids = [cloud.openstack_json("server", "show", name)["id"] for name in ("ans-1", "ans-2")]
    hosts = {cloud.openstack_json("server", "show", server_id, cloud="cloudcore-admin")["OS-EXT-SRV-ATTR:host"]
             for server_id in ids}
    assert len(hosts) == 2 and None not in hosts, hosts
    assert cloud.openstack_json("server", "show", "ans-1")["status"] == "ACTIVE"
    project = cloud.openstack_json("server", "show", "ans-1")["project_id"]
    quota = limits(cloud.openstack_json("quota", "show", project, cloud="cloudcore-admin"))
    assert (quota["instances"], quota["key-pairs"]) == (12, 40), quota
    assert cloud.openstack_json("server", "group", "show", "ans-spread")["policy"] == "anti-affinity"

    run_playbook(cloud, tmp_path, TEARDOWN, "teardown", project=project)
    assert not {s["Name"] for s in cloud.openstack_json("server", "list")} & {"ans-1", "ans-2"}
    assert "ans-spread" not in {g["Name"] for g in cloud.openstack_json("server", "group", "list")}
    assert "ans-key" not in {k["Name"] for k in cloud.openstack_json("keypair", "list")}
    defaults = limits(cloud.openstack_json("quota", "show", "--default", project, cloud="cloudcore-admin"))
    assert limits(cloud.openstack_json("quota", "show", project, cloud="cloudcore-admin"))["instances"] == \
        defaults["instances"]
    # again: nothing is left to remove (the quota module reports a reset as a change every time:
    # it cannot know the defaults, by its own comment)
    assert run_playbook(cloud, tmp_path, TEARDOWN, "teardown-again", project=project) == 1


def test_a_playbook_with_a_security_group_a_volume_and_a_floating_ip(live_cloud: LiveCloud, tmp_path: Path) -> None:
    cloud = live_cloud
    assert run_playbook(cloud, tmp_path, WEB, "web") == 6
    server = cloud.sdk().compute.find_server("ans-web-1", ignore_missing=False)
    assert server.status == "ACTIVE"
    kinds = {a["OS-EXT-IPS:type"]: a["addr"] for a in server.addresses["demo-net"]}
    assert set(kinds) == {"fixed", "floating"}, server.addresses
    assert {g["name"] for g in server.security_groups} == {"default", "ans-web"}
    fips = {f["Floating IP Address"]: f["Fixed IP Address"] for f in cloud.openstack_json("floating", "ip", "list")}
    assert fips[kinds["floating"]] == kinds["fixed"], fips
    rules = cloud.openstack_json("security", "group", "rule", "list", "ans-web")
    assert any(r["IP Protocol"] == "tcp" and r["Port Range"] == "22:22" for r in rules), rules
    volume = cloud.openstack_json("volume", "show", "ans-data")
    assert volume["status"] == "in-use" and [a["server_id"] for a in volume["attachments"]] == [server.id]
    assert cloud.openstack_json("volume", "snapshot", "show", "ans-data-snap")["status"] == "available"
    # the same playbook again changes nothing
    assert run_playbook(cloud, tmp_path, WEB, "web-again") == 0

    assert run_playbook(cloud, tmp_path, WEB_TEARDOWN, "web-teardown") == 4
    assert kinds["floating"] not in {f["Floating IP Address"] for f in cloud.openstack_json("floating", "ip", "list")}
    assert "ans-data" not in {v["Name"] for v in cloud.openstack_json("volume", "list")}
    assert "ans-web" not in {g["Name"] for g in cloud.openstack_json("security", "group", "list")}
    assert run_playbook(cloud, tmp_path, WEB_TEARDOWN, "web-teardown-again") == 0


def test_a_playbook_of_an_operator_and_a_user_with_a_volume_backed_server_a_router_and_a_port(
        live_cloud: LiveCloud, tmp_path: Path) -> None:
    cloud = live_cloud
    admin = "cloudcore-admin"
    servers_ports = lambda: {p["ID"] for p in cloud.openstack_json("port", "list", "--long", cloud=admin)  # noqa: E731
                             if p["Device Owner"].startswith("compute:")}
    floating_ips = lambda: {f["ID"] for f in cloud.openstack_json("floating", "ip", "list", cloud=admin)}  # noqa: E731
    before = (servers_ports(), floating_ips())
    (tmp_path / "disk.raw").write_bytes(bytes(1024 * 1024))
    assert run_playbook(cloud, tmp_path, OPS, "ops") == 19
    demo_project = cloud.openstack_json("project", "show", "demo", cloud=admin)["id"]
    flavor = cloud.openstack_json("flavor", "show", "ans3.private", cloud=admin)
    assert flavor["os-flavor-access:is_public"] is False and flavor["access_project_ids"] == [demo_project]
    assert flavor["properties"] == {"hw:cpu_policy": "shared", "quota:disk_read_bytes_sec": "10240000"}
    aggregate = cloud.openstack_json("aggregate", "show", "ans3-agg", cloud=admin)
    assert sorted(aggregate["hosts"]) == ["compute1", "compute2"] and aggregate["properties"] == {"ssd": "true"}
    image = cloud.openstack_json("image", "show", "ans3-img")
    assert (image["properties"]["os_distro"], image["tags"], image["size"]) == ("cirros", ["ans3"], 1024 * 1024)
    bfv = cloud.openstack_json("server", "show", "ans3-bfv")
    assert (bfv["status"], bfv["image"], bfv["locked"]) == ("ACTIVE", "N/A (booted from volume)", False)
    assert bfv["properties"] == {"role": "bfv", "owner": "ops", "tier": "db"}
    actions = [a["Action"] for a in cloud.openstack_json("server", "event", "list", "ans3-bfv")]
    assert actions[::-1] == ["create", "stop", "start", "pause", "unpause", "suspend", "resume", "lock", "unlock",
                             "rebuild", "shelve", "unshelve", "attach_volume"], actions
    volumes = {v["Name"]: v for v in cloud.openstack_json("volume", "list")}
    assert {volumes[n]["Status"] for n in ("ans3-boot", "ans3-data")} == {"in-use"}
    router = cloud.openstack_json("router", "show", "ans3-router")
    public = cloud.openstack_json("network", "show", "public")["id"]
    assert router["external_gateway_info"]["network_id"] == public
    onport = cloud.openstack_json("server", "show", "ans3-onport")
    port = cloud.openstack_json("port", "show", "ans3-port")
    assert [a["ip_address"] for a in port["fixed_ips"]] == ["192.168.53.20"]
    assert port["device_id"] == onport["id"]
    assert port["device_owner"] == f"compute:{onport['OS-EXT-AZ:availability_zone']}"
    sg = cloud.openstack_json("security", "group", "show", "ans3-sg")["id"]
    assert port["security_group_ids"] == [sg]
    # the same playbook again changes nothing
    assert run_playbook(cloud, tmp_path, OPS, "ops-again") == 0

    assert run_playbook(cloud, tmp_path, OPS_TEARDOWN, "ops-teardown") == 17
    names = lambda *what: {i["Name"] for i in cloud.openstack_json(*what)}  # noqa: E731
    assert not names("server", "list") & {"ans3-bfv", "ans3-onport"}
    assert not names("volume", "list") & {"ans3-boot", "ans3-data"}
    assert "ans3-img" not in names("image", "list")
    assert not names("port", "list") & {"ans3-port"}
    assert (servers_ports(), floating_ips()) == before
    assert "ans3-router" not in names("router", "list")
    assert "ans3.private" not in {f["Name"] for f in cloud.openstack_json("flavor", "list", "--all", cloud=admin)}
    assert "ans3-agg" not in {a["Name"] for a in cloud.openstack_json("aggregate", "list", cloud=admin)}
    assert "ans3-proj" not in {p["Name"] for p in cloud.openstack_json("project", "list", cloud=admin)}
    # again: nothing is left to remove (but the quota reset, a change every time: see the first test)
    assert run_playbook(cloud, tmp_path, OPS_TEARDOWN, "ops-teardown-again") == 1

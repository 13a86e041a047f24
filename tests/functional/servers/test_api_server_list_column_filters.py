"""The server list's filters Nova leaves to a regular expression on an instance column (power_state,
progress, config_drive, created_at, launched_at, terminated_at: admins' and from 2.83 members';
hostname, access_ip_v4/v6, launch_index, kernel_id, ramdisk_id, display_name/description, locked_by,
root_device_name, updated_at and the flavor's sizes: admins' only; image_ref exactly and auto_disk_config
as a boolean: admins' only; os_type, architecture and vm_mode from the image's properties, and the local
disks' devices from the flavor: admins' only), across two cells."""
from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace

import pytest

from cells.context import target_cell
from cells.models import InstanceMapping
from compute.block_devices import local_disks
from servers.models import BuildRequest, Instance
from servers.selectors import LOCAL_DEVICE_NAMES

ALL = ["default", "cell0", "cell1", "cell2"]
pytestmark = pytest.mark.django_db(databases=ALL)

LAUNCHED = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
CREATED = datetime(2025, 7, 8, 9, 10, 11, tzinfo=UTC)


def _set(cloud, server_id, **columns):
    with target_cell(cloud.cell_of(server_id)):
        assert Instance.objects.filter(uuid=server_id).update(**columns) == 1


def _merge(cloud, server_id, **fields):
    """Items added to a server's JSON columns (``system_metadata={...}``, ``flavor={...}``)."""
    with target_cell(cloud.cell_of(server_id)):
        instance = Instance.objects.get(uuid=server_id)
        for field, items in fields.items():
            setattr(instance, field, {**(getattr(instance, field) or {}), **items})
        instance.save(update_fields=list(fields))


@pytest.fixture
def servers(cloud):
    # given a running server in az1 and a stopped one in az2 (one per cell), whose columns differ
    client = cloud.member()
    running = cloud.create_server(client, "running", availability_zone="az1")
    stopped = cloud.create_server(client, "stopped", availability_zone="az2")
    assert cloud.cell_of(running["id"]) != cloud.cell_of(stopped["id"])
    assert cloud.action(client, stopped["id"], {"os-stop": None}).status_code == 202
    cloud.wait_for_status(client, stopped["id"], "SHUTOFF")
    _set(cloud, running["id"], progress=50, config_drive="True", launched_at=LAUNCHED, hostname="web-1",
         access_ip_v4="192.0.2.10", access_ip_v6="2001:db8::10", launch_index=3, kernel_id="k-1",
         ramdisk_id="r-1", display_description="the web tier", locked_by="admin", root_device_name="/dev/vda",
         memory_mb=4096, auto_disk_config=True, image_ref="img-web")
    _set(cloud, stopped["id"], progress=100, config_drive="", created_at=CREATED,
         terminated_at=LAUNCHED, hostname="db-2", root_device_name="/dev/sda", memory_mb=512, vcpus=3,
         auto_disk_config=False, image_ref="img-db")
    # the running one from a Linux image for x86_64 in HVM mode, with an ephemeral disk and swap (its
    # local disks /dev/vdb and /dev/vdc); the stopped one from an image without those, with swap only
    _set(cloud, running["id"], ephemeral_gb=1)
    _merge(cloud, running["id"], flavor={"swap": 512},
           system_metadata={"image_os_type": "linux", "image_architecture": "x86_64", "image_vm_mode": "hvm"})
    _set(cloud, stopped["id"], ephemeral_gb=0)
    _merge(cloud, stopped["id"], flavor={"swap": 256})
    return client


def _names(cloud, who, query, version):
    response = cloud.get(who, "servers/detail?" + query, version=version)
    assert response.status_code == 200, response.content
    return sorted(s["name"] for s in response.json()["servers"])


@pytest.mark.parametrize("query, expected", [
    ("power_state=1", ["running"]),
    ("power_state=4", ["stopped"]),
    ("power_state=7", []),
    ("power_state=x", []),  # any regular expression, as Nova's schema: no 400, nothing matches
    ("power_state=1&power_state=4", ["stopped"]),  # one value, the last
    ("progress=50", ["running"]),
    ("progress=0", ["running", "stopped"]),  # a search in the text: 50 and 100 both hold a 0
    ("progress=^100$", ["stopped"]),
    ("config_drive=True", ["running"]),
    ("created_at=2025-07-08", ["stopped"]),
    ("launched_at=2026-01-02", ["running"]),
    ("terminated_at=2026-01-02", ["stopped"]),
    ("terminated_at=1999", []),
])
def test_members_filter_from_2_83_and_admins_always(cloud, servers, query, expected):
    # then a member's filter applies from 2.83, an admin's at every version
    assert _names(cloud, servers, query, "2.83") == expected
    assert _names(cloud, cloud.admin(), "all_tenants=1&" + query, "2.1") == expected
    assert _names(cloud, cloud.admin(), "all_tenants=1&" + query, "2.83") == expected
    # and below 2.83 a member's is ignored
    assert _names(cloud, servers, query, "2.82") == ["running", "stopped"]


@pytest.mark.parametrize("query, expected", [
    ("hostname=web", ["running"]),
    ("hostname=^db-2$", ["stopped"]),
    ("access_ip_v4=192.0.2", ["running"]),
    ("access_ip_v6=2001:db8::10", ["running"]),
    ("launch_index=3", ["running"]),
    ("launch_index=0", ["stopped"]),
    ("kernel_id=k-1", ["running"]),
    ("ramdisk_id=r-9", []),
    ("display_name=^stop", ["stopped"]),
    ("display_description=web", ["running"]),
    ("locked_by=admin", ["running"]),
    ("root_device_name=sda$", ["stopped"]),
    ("root_device_name=/dev/", ["running", "stopped"]),
    ("memory_mb=^4096$", ["running"]),
    ("vcpus=3", ["stopped"]),
    ("updated_at=1999", []),
    ("image_ref=img-web", ["running"]),
    ("image_ref=img", []),  # exact, as Nova's
    ("auto_disk_config=true", ["running"]),
    ("auto_disk_config=1", ["running"]),
    ("auto_disk_config=False", ["stopped"]),
    ("os_type=linux", ["running"]),
    ("os_type=^win", []),
    ("architecture=x86", ["running"]),
    ("vm_mode=^hvm$", ["running"]),
    ("default_ephemeral_device=vdb", ["running"]),
    ("default_ephemeral_device=/dev/", ["running"]),  # the stopped one has no ephemeral disk
    ("default_swap_device=vdc$", ["running"]),  # after its ephemeral disk
    ("default_swap_device=vdb$", ["stopped"]),  # right after the root disk
    ("default_swap_device=^/dev/vd", ["running", "stopped"]),
    ("default_swap_device=sda", []),
])
def test_admin_only_column_filters(cloud, servers, query, expected):
    # then an admin's filter applies, a member's is ignored even at 2.83
    assert _names(cloud, cloud.admin(), "all_tenants=1&" + query, "2.1") == expected
    assert _names(cloud, servers, query, "2.83") == ["running", "stopped"]


def test_a_boolean_filter_that_is_no_boolean_is_400(cloud, servers):
    response = cloud.get(cloud.admin(), "servers?all_tenants=1&auto_disk_config=maybe", version="2.1")
    assert response.status_code == 400
    assert "Invalid value for auto_disk_config filter: maybe" in response.json()["badRequest"]["message"]
    # as the locked filter (2.73) is, whoever asks
    response = cloud.get(servers, "servers?locked=maybe", version="2.73")
    assert response.status_code == 400
    assert "Invalid value for locked filter: maybe" in response.json()["badRequest"]["message"]


@pytest.mark.parametrize("version", ["2.1", "2.82", "2.83"])
@pytest.mark.parametrize("key", ["power_state", "progress", "created_at", "hostname", "os_type",
                                 "default_swap_device"])
def test_an_invalid_regular_expression_is_400_whoever_asks(cloud, servers, key, version):
    # then Nova's query schema refuses a value that is not a regular expression, even where it is ignored
    for who in (servers, cloud.admin()):
        response = cloud.get(who, f"servers?{key}=[", version=version)
        assert response.status_code == 400, (who, response.content)
        assert "is not a 'regex'" in response.json()["badRequest"]["message"]


def test_a_server_still_building_is_kept_where_its_value_is_empty(cloud, servers):
    # given a build request of the member's project, waiting for a cell, with a hostname and no power
    # state, progress or config drive yet
    project_id = cloud.instance(cloud.get(servers, "servers").json()["servers"][0]["id"]).project_id
    br = BuildRequest.objects.create(instance_uuid="b" * 8 + "-0000-4000-8000-000000000000", project_id=project_id,
                                     instance={"display_name": "building", "hostname": "bld-1"})
    InstanceMapping.objects.create(instance_uuid=br.instance_uuid, cell=None, project_id=project_id)

    def names(who, query, version):
        response = cloud.get(who, "servers?" + query, version=version)
        assert response.status_code == 200, response.content
        return sorted(s["name"] for s in response.json()["servers"])

    # then, as Nova's BuildRequestList, an empty value passes a filter and another is searched
    assert names(servers, "power_state=1", "2.83") == ["building", "running"]
    assert names(servers, "config_drive=True&progress=5", "2.83") == ["building", "running"]
    assert names(cloud.admin(), "all_tenants=1&hostname=bld", "2.1") == ["building"]
    assert names(cloud.admin(), "all_tenants=1&hostname=web", "2.1") == ["running"]


def test_a_server_still_building_is_matched_by_its_image_and_disk_config(cloud, servers):
    # given a build request of the member's project, booted from img-web without auto disk config
    project_id = cloud.instance(cloud.get(servers, "servers").json()["servers"][0]["id"]).project_id
    br = BuildRequest.objects.create(instance_uuid="c" * 8 + "-0000-4000-8000-000000000000", project_id=project_id,
                                     instance={"display_name": "building", "image_ref": "img-web",
                                               "auto_disk_config": False})
    InstanceMapping.objects.create(instance_uuid=br.instance_uuid, cell=None, project_id=project_id)

    def names(query):
        response = cloud.get(cloud.admin(), "servers?all_tenants=1&" + query, version="2.1")
        assert response.status_code == 200, response.content
        return sorted(s["name"] for s in response.json()["servers"])

    # then the exact image and the boolean apply to it as to the servers in cells (as Nova's BuildRequestList)
    assert names("image_ref=img-web") == ["building", "running"]
    assert names("image_ref=img-db") == ["stopped"]
    assert names("auto_disk_config=false") == ["building", "stopped"]
    assert names("auto_disk_config=true") == ["running"]


@pytest.mark.parametrize("ephemeral_gb, swap, expected", [(1, 512, ["/dev/vdb", "/dev/vdc"]), (0, 256, ["/dev/vdb"]),
                                                           (1, 0, ["/dev/vdb"])])
def test_the_device_filters_name_the_devices_the_host_gives_the_local_disks(ephemeral_gb, swap, expected):
    # the filters' device names (a constant beside them) are those compute gives the flavor's local disks
    local = local_disks(SimpleNamespace(ephemeral_gb=ephemeral_gb, flavor={"swap": swap}))
    names = [e["device_name"] for e in local["ephemerals"]] + ([local["swap"]["device_name"]] if local["swap"] else [])
    assert names == expected == list(LOCAL_DEVICE_NAMES[:len(expected)])


def test_a_server_still_building_is_matched_by_its_image_properties(cloud, servers):
    # given a build request of the member's project, from a Windows image
    project_id = cloud.instance(cloud.get(servers, "servers").json()["servers"][0]["id"]).project_id
    br = BuildRequest.objects.create(instance_uuid="d" * 8 + "-0000-4000-8000-000000000000", project_id=project_id,
                                     instance={"display_name": "building",
                                               "system_metadata": {"image_os_type": "windows"}})
    InstanceMapping.objects.create(instance_uuid=br.instance_uuid, cell=None, project_id=project_id)

    def names(query):
        response = cloud.get(cloud.admin(), "servers?all_tenants=1&" + query, version="2.1")
        assert response.status_code == 200, response.content
        return sorted(s["name"] for s in response.json()["servers"])

    # then its property is searched, an empty one passes (as Nova's BuildRequestList), and its local
    # disks have no devices yet (it passes)
    assert names("os_type=linux") == ["running"]
    assert names("os_type=win") == ["building"]
    assert names("architecture=x86") == ["building", "running"]
    assert names("default_swap_device=vdc") == ["building", "running"]


@pytest.mark.parametrize("query", ["name=(a%2B)%2Bb", "name=(a|aa)*b", "progress=(0*)*1", "name=(x{1,3})*y"])
def test_a_search_that_can_backtrack_for_ever_is_refused(cloud, servers, query):
    # given a server whose name such a pattern takes long to search: (a+)+b over these 22 letters takes
    # a quarter of a second in the web process, twice as long with each letter more (minutes at 30)
    cloud.create_server(servers, "a" * 22)
    # when a member lists with a pattern that repeats a repetition or alternatives, then 400 at once
    response = cloud.get(servers, "servers/detail?" + query, version="2.83")
    assert response.status_code == 400, response.content
    assert "can backtrack for ever" in response.content.decode()


@pytest.mark.parametrize("query, expected", [("name=^a%2B$", ["a" * 40]), ("name=(ab)%2B|runn", ["running"]),
                                             ("name=^(run|stop)", ["running", "stopped"])])
def test_a_search_that_repeats_once_still_works(cloud, servers, query, expected):
    cloud.create_server(servers, "a" * 40)
    assert _names(cloud, servers, query, "2.83") == expected

"""The servers API on the in-process cloud: create options, list/paging/filters, show shapes per
microversion, update, metadata, tags, instance actions, 400/403/404 answers."""
from __future__ import annotations

import uuid

import pytest

ALL = ["default", "cell0", "cell1", "cell2"]
pytestmark = pytest.mark.django_db(databases=ALL)


# --- create --------------------------------------------------------------------------------------
def test_min_max_count_creates_numbered_servers_with_one_reservation(cloud):
    client = cloud.member()
    # when three servers are asked for at once, with the reservation id back
    body = cloud.create_server(client, "multi", min_count=2, max_count=3, return_reservation_id=True)
    # then a reservation id is returned and three ACTIVE servers carry it
    rid = body["reservation_id"]
    servers = cloud.get(client, f"servers/detail?reservation_id={rid}", version="2.3").json()["servers"]
    assert sorted(s["name"] for s in servers) == ["multi-1", "multi-2", "multi-3"]
    assert {s["status"] for s in servers} == {"ACTIVE"}


def test_availability_zone_places_the_server_in_that_zone(cloud):
    client = cloud.member()
    server = cloud.create_server(client, "z2", availability_zone="az2")
    shown = cloud.wait_for_status(client, server["id"], "ACTIVE")
    assert shown["OS-EXT-AZ:availability_zone"] == "az2"
    assert cloud.instance(server["id"]).host in ("compute3", "compute4")
    assert cloud.cell_of(server["id"]) == "cell2"


def test_admin_forces_a_host_with_az_host_and_members_may_not(cloud):
    # given an admin booting to az1:compute2
    server = cloud.create_server(cloud.admin(), "forced", availability_zone="az1:compute2")
    # then it runs on compute2
    assert cloud.instance(server["id"]).host == "compute2"
    # and a member asking the same is refused
    cloud.create_server(cloud.member(), "forced", availability_zone="az1:compute2", expect=403)


def test_admin_requests_a_host_at_2_74(cloud):
    server = cloud.create_server(cloud.admin(), "pinned", host="compute3", version="2.74")
    assert cloud.instance(server["id"]).host == "compute3"


def test_key_metadata_user_data_tags_description_and_hostname_are_kept(cloud):
    client = cloud.member()
    pub = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIrvZvbEbOYxXNdoDKOp3GJrd3GUqANhJpIbfoAbzsoE test"
    assert cloud.post(client, "os-keypairs", {"keypair": {"name": "k1", "public_key": pub}}).status_code == 200
    server = cloud.create_server(
        client, "full", key_name="k1", metadata={"role": "web"}, user_data="aGVsbG8=", tags=["a", "b"],
        description="my server", hostname="web-1", version="2.90",
    )
    shown = cloud.show(client, server["id"], version="2.90")
    assert shown["key_name"] == "k1"
    assert shown["metadata"] == {"role": "web"}
    assert shown["tags"] == ["a", "b"]
    assert shown["description"] == "my server"
    assert shown["OS-EXT-SRV-ATTR:hostname"] == "web-1"
    assert cloud.instance(server["id"]).user_data == "aGVsbG8="


def test_response_headers_and_location(cloud):
    response = cloud.post(cloud.member(), "servers", {"server": {
        "name": "h", "flavorRef": "1", "imageRef": cloud.image_id, "networks": "none"}}, version="2.37")
    assert response.status_code == 202
    assert response["x-compute-request-id"].startswith("req-")
    assert response["Location"].endswith(f"/servers/{response.json()['server']['id']}")


@pytest.mark.parametrize("change, version, fragment", [
    ({"flavorRef": "nope"}, "2.37", "Invalid flavorRef provided."),
    ({"imageRef": str(uuid.UUID(int=1))}, "2.37", "Can not find requested image"),
    ({"networks": [{"uuid": str(uuid.UUID(int=2))}]}, "2.37", "could not be found"),
    ({"networks": [{"uuid": "not-a-uuid"}]}, "2.37", "Bad networks format"),
    ({"key_name": "missing"}, "2.37", "Invalid key_name provided."),
    ({"availability_zone": "nowhere"}, "2.37", "The requested availability zone is not available"),
    ({"user_data": "***"}, "2.37", "User data needs to be valid base 64."),
    ({"min_count": 3, "max_count": 2}, "2.37", "min_count"),
    ({"networks": None}, "2.37", "networks"),
    ({"name": ""}, "2.37", "name"),
    ({"bogus": 1}, "2.37", "bogus"),
    ({"tags": ["x"]}, "2.51", "tags"),
])
def test_bad_create_requests_are_400(cloud, change, version, fragment):
    server = {"name": "bad", "flavorRef": "1", "imageRef": cloud.image_id, "networks": "auto"}
    server.update(change)
    server = {k: v for k, v in server.items() if v is not None}
    response = cloud.post(cloud.member(), "servers", {"server": server}, version=version)
    assert response.status_code == 400, response.content
    assert fragment in response.json()["badRequest"]["message"]


@pytest.mark.parametrize("body", [None, [], "x", {"server": None}, {"server": {"name": 1}}])
def test_odd_bodies_are_400_not_500(cloud, body):
    client = cloud.member()
    response = client.post("/compute/v2.1/servers", body, format="json") if body is not None else \
        client.post("/compute/v2.1/servers")
    assert response.status_code == 400


# --- list ----------------------------------------------------------------------------------------
def test_list_pages_with_limit_and_marker_across_cells(cloud):
    client = cloud.member()
    ids = [cloud.create_server(client, f"s{i}", availability_zone="az1" if i % 2 else "az2")["id"]
           for i in range(5)]
    # when listing two at a time
    first = cloud.get(client, "servers?limit=2").json()
    assert [s["id"] for s in first["servers"]] == ids[::-1][:2]
    next_href = first["servers_links"][0]["href"]
    assert "marker=" + ids[3] in next_href
    second = cloud.get(client, f"servers?limit=2&marker={ids[3]}").json()
    third = cloud.get(client, f"servers?limit=2&marker={second['servers'][-1]['id']}").json()
    # then every server comes once, newest first
    seen = [s["id"] for page in (first, second, third) for s in page["servers"]]
    assert seen == ids[::-1]
    assert "servers_links" not in third


def test_list_filters_and_sorting(cloud):
    client = cloud.member()
    a = cloud.create_server(client, "alpha", tags=["x", "y"], version="2.52")
    b = cloud.create_server(client, "beta", tags=["y"], version="2.52")
    names = lambda q, v="2.52": [s["name"] for s in cloud.get(client, "servers?" + q, version=v).json()["servers"]]  # noqa: E731
    assert names("name=alp") == ["alpha"]
    assert names("tags=x,y") == ["alpha"]
    assert names("tags-any=x,y") == ["beta", "alpha"]
    assert names("not-tags=x") == ["beta"]
    assert names("sort_key=display_name&sort_dir=asc") == ["alpha", "beta"]
    assert names("sort_key=host&sort_dir=desc") == ["beta", "alpha"]  # ignored for members
    assert names("status=ACTIVE") == ["beta", "alpha"]
    assert names("status=SHUTOFF") == []
    assert names(f"image={cloud.image_id}") == ["beta", "alpha"]
    assert names("flavor=2") == []
    assert names("changes-since=2000-01-01T00:00:00Z") == ["beta", "alpha"]
    # and a non-admin's admin-only or unknown filters are ignored
    assert names("host=compute1&whatever=1") == ["beta", "alpha"]
    assert {a["id"], b["id"]} == {s["id"] for s in cloud.get(client, "servers").json()["servers"]}


def test_list_filters_by_vm_state_and_task_state_for_admins_and_from_2_83_members(cloud):
    # given a running server and a stopped one
    client, admin = cloud.member(), cloud.admin()
    cloud.create_server(client, "running")
    stopped = cloud.create_server(client, "stopped")
    assert cloud.action(client, stopped["id"], {"os-stop": None}).status_code == 202
    cloud.wait_for_status(client, stopped["id"], "SHUTOFF")

    def names(who, query, version):
        response = cloud.get(who, "servers/detail?" + query, version=version)
        assert response.status_code == 200, response.content
        return sorted(s["name"] for s in response.json()["servers"])

    # then a member filters by the exact states from 2.83 (any of repeated values), as Nova
    assert names(client, "vm_state=stopped", "2.83") == ["stopped"]
    assert names(client, "vm_state=active", "2.83") == ["running"]
    assert names(client, "vm_state=active&vm_state=stopped", "2.83") == ["running", "stopped"]
    assert names(client, "vm_state=paused", "2.83") == []
    assert names(client, "task_state=deleting", "2.83") == []
    # below 2.83 the member's state filters are ignored; an admin's never are
    assert names(client, "vm_state=stopped", "2.82") == ["running", "stopped"]
    assert names(admin, "all_tenants=1&vm_state=stopped", "2.1") == ["stopped"]


def test_projects_are_isolated_and_admin_sees_all_tenants(cloud):
    mine = cloud.create_server(cloud.member("alice", "p-alice"), "mine")
    other = cloud.member("bob", "p-bob")
    # then bob does not see alice's server: empty list, 404 on show/delete
    assert cloud.get(other, "servers").json()["servers"] == []
    assert cloud.get(other, f"servers/{mine['id']}").status_code == 404
    assert cloud.delete(other, f"servers/{mine['id']}").status_code == 404
    # and the admin sees it with all_tenants, and the host attributes
    admin = cloud.admin()
    listed = cloud.get(admin, "servers/detail?all_tenants=1").json()["servers"]
    assert [s["id"] for s in listed] == [mine["id"]]
    assert listed[0]["OS-EXT-SRV-ATTR:host"] in cloud.hosts
    assert cloud.get(admin, "servers/detail").json()["servers"] == []
    # and without all_tenants a project filter does not widen the admin's list (Nova ignores it)
    for query in (f"tenant_id={listed[0]['tenant_id']}", f"project_id={listed[0]['tenant_id']}"):
        assert cloud.get(admin, f"servers/detail?{query}").json()["servers"] == [], query
    assert [s["id"] for s in cloud.get(admin, f"servers/detail?all_tenants=1&tenant_id={listed[0]['tenant_id']}")
            .json()["servers"]] == [mine["id"]]
    # and a member asking for all_tenants is refused
    assert cloud.get(other, "servers?all_tenants=1").status_code == 403


def test_bad_list_parameters_are_400(cloud):
    client = cloud.member()
    for query in ("limit=-1", "limit=x", "marker=" + str(uuid.uuid4()), "sort_key=bogus", "changes-since=nope"):
        assert cloud.get(client, "servers?" + query).status_code == 400, query


# --- show shapes ---------------------------------------------------------------------------------
def test_show_shape_per_microversion(cloud):
    client = cloud.member()
    server = cloud.create_server(client, "shapes")
    sid = server["id"]
    v21 = cloud.show(client, sid, version="2.1")
    assert v21["flavor"]["id"] == "1" and "links" in v21["flavor"]
    assert "locked" not in v21 and "description" not in v21 and "tags" not in v21
    assert "OS-EXT-SRV-ATTR:host" not in v21
    v247 = cloud.show(client, sid, version="2.47")
    assert v247["flavor"]["original_name"] == "m1.tiny" and v247["flavor"]["ram"] == 512
    assert v247["locked"] is False and v247["tags"] == [] and v247["description"] is None
    v2100 = cloud.show(client, sid, version="2.100")
    for key in ("locked_reason", "server_groups", "pinned_availability_zone", "scheduler_hints",
                "trusted_image_certificates"):
        assert key in v2100, key
    assert "properties" in v2100["image"]
    listed = cloud.get(client, "servers/detail", version="2.100").json()["servers"][0]
    assert "server_groups" not in listed and "scheduler_hints" in listed  # server_groups: show only
    admin = cloud.show(cloud.admin(), sid, version="2.16")
    assert admin["host_status"] == "UP"
    assert admin["OS-EXT-SRV-ATTR:instance_name"] == f"instance-{sid}"


# --- update, metadata, tags ----------------------------------------------------------------------
def test_update_name_description_hostname(cloud):
    client = cloud.member()
    sid = cloud.create_server(client, "old")["id"]
    response = cloud.put(client, f"servers/{sid}", {"server": {"name": "new", "description": "d",
                                                               "hostname": "new-host"}}, version="2.90")
    assert response.status_code == 200
    body = response.json()["server"]
    assert (body["name"], body["description"], body["OS-EXT-SRV-ATTR:hostname"]) == ("new", "d", "new-host")
    assert cloud.put(client, f"servers/{sid}", {"server": {"description": "d"}}, version="2.18").status_code == 400
    # before 2.75 the answer is the reduced server
    old = cloud.put(client, f"servers/{sid}", {"server": {"name": "older"}}, version="2.74").json()["server"]
    assert old["name"] == "older" and "OS-EXT-STS:vm_state" not in old and "key_name" not in old


def test_metadata_crud(cloud):
    client = cloud.member()
    sid = cloud.create_server(client, "meta", metadata={"a": "1"})["id"]
    assert cloud.post(client, f"servers/{sid}/metadata", {"metadata": {"b": "2"}}).json() == {
        "metadata": {"a": "1", "b": "2"}}
    assert cloud.put(client, f"servers/{sid}/metadata/c", {"meta": {"c": "3"}}).json() == {"meta": {"c": "3"}}
    assert cloud.get(client, f"servers/{sid}/metadata/c").json() == {"meta": {"c": "3"}}
    assert cloud.delete(client, f"servers/{sid}/metadata/a").status_code == 204
    assert cloud.get(client, f"servers/{sid}/metadata/a").status_code == 404
    assert cloud.put(client, f"servers/{sid}/metadata", {"metadata": {"z": "9"}}).json() == {"metadata": {"z": "9"}}
    assert cloud.get(client, f"servers/{sid}/metadata").json() == {"metadata": {"z": "9"}}
    assert cloud.put(client, f"servers/{sid}/metadata/c", {"meta": {"d": "3"}}).status_code == 400


def test_tags_crud_from_2_26(cloud):
    client = cloud.member()
    sid = cloud.create_server(client, "tagged")["id"]
    assert cloud.get(client, f"servers/{sid}/tags", version="2.25").status_code == 404
    assert cloud.put(client, f"servers/{sid}/tags/t1", version="2.26").status_code == 201
    assert cloud.put(client, f"servers/{sid}/tags/t1", version="2.26").status_code == 204
    assert cloud.get(client, f"servers/{sid}/tags/t1", version="2.26").status_code == 204
    assert cloud.put(client, f"servers/{sid}/tags", {"tags": ["b", "a"]}, version="2.26").json() == {"tags": ["a", "b"]}
    assert cloud.delete(client, f"servers/{sid}/tags/a", version="2.26").status_code == 204
    assert cloud.get(client, f"servers/{sid}/tags", version="2.26").json() == {"tags": ["b"]}
    assert cloud.delete(client, f"servers/{sid}/tags", version="2.26").status_code == 204
    assert cloud.get(client, f"servers/{sid}/tags/b", version="2.26").status_code == 404


# --- instance actions ----------------------------------------------------------------------------
def test_instance_actions_with_events_and_deleted_servers(cloud):
    client = cloud.member()
    sid = cloud.create_server(client, "acts")["id"]
    actions = cloud.get(client, f"servers/{sid}/os-instance-actions", version="2.58").json()["instanceActions"]
    assert [a["action"] for a in actions] == ["create"] and actions[0]["updated_at"]
    rid = actions[0]["request_id"]
    member_view = cloud.get(client, f"servers/{sid}/os-instance-actions/{rid}", version="2.62").json()
    event = member_view["instanceAction"]["events"][0]
    assert event["event"] == "compute_build_and_run_instance" and event["result"] == "Success"
    assert event["hostId"] and "host" not in event and "traceback" not in event
    admin_view = cloud.get(cloud.admin(), f"servers/{sid}/os-instance-actions/{rid}", version="2.84").json()
    assert admin_view["instanceAction"]["events"][0]["host"] in cloud.hosts
    assert "details" in admin_view["instanceAction"]["events"][0]
    # when the server is deleted, its actions are still listed from 2.21
    assert cloud.delete(client, f"servers/{sid}").status_code == 204
    listed = cloud.get(client, f"servers/{sid}/os-instance-actions", version="2.21").json()["instanceActions"]
    assert sorted(a["action"] for a in listed) == ["create", "delete"]
    assert cloud.get(client, f"servers/{sid}/os-instance-actions", version="2.20").status_code == 404


def test_ip_filter_matches_fixed_addresses(cloud):
    client = cloud.member()
    on_net = cloud.create_server(client, "on-net", networks="demo-net")
    cloud.create_server(client, "no-net", networks="none")
    ip = cloud.show(client, on_net["id"])["addresses"]["demo-net"][0]["addr"]
    listed = cloud.get(client, f"servers?ip={ip.replace('.', '[.]')}$").json()["servers"]
    assert [s["name"] for s in listed] == ["on-net"]
    assert cloud.get(client, "servers?ip=192[.]168").json()["servers"] == []


@pytest.mark.parametrize("query", [
    "limit=", "marker=", "sort_key=", "sort_dir=up", "status=", "status=nonsense", "all_tenants=maybe",
    "changes-since=", "changes-before=2020-13-45", "locked=perhaps", "tags=", "not-tags-any=,,", "name=(",
    "all_tenants=",
    "ip=[", "flavor=", "image=", "limit=99999999999999999999", "deleted=x", "host=", "project_id=",
])
def test_odd_list_queries_never_500(cloud, query):
    cloud.create_server(cloud.member(), "x")
    for client in (cloud.member(), cloud.admin()):
        for path in ("servers", "servers/detail"):
            response = cloud.get(client, f"{path}?{query}", version="2.90")
            assert response.status_code in (200, 400, 403), (path, query, response.status_code, response.content)


@pytest.mark.parametrize("path", [
    "servers/not-a-uuid", "servers/not-a-uuid/metadata", "servers/x/tags", "servers/x/os-instance-actions",
    "servers/x/os-instance-actions/req-1",
])
def test_unknown_servers_are_404(cloud, path):
    assert cloud.get(cloud.member(), path, version="2.90").status_code == 404


def test_metadata_and_tags_of_an_error_server_are_409(cloud):
    client = cloud.member()
    cloud.flavor("m1.huge", vcpus=1, ram=30000)
    sid = cloud.create_server(client, "broken", flavor="m1.huge")["id"]
    response = cloud.post(client, f"servers/{sid}/metadata", {"metadata": {"a": "1"}})
    assert response.status_code == 409
    assert response.json()["conflictingRequest"]["message"] == (
        f"Cannot 'update metadata' instance {sid} while it is in vm_state error")
    assert cloud.put(client, f"servers/{sid}/tags/t", version="2.26").status_code == 409
    # reading is fine
    assert cloud.get(client, f"servers/{sid}/metadata").json() == {"metadata": {}}


def test_a_server_still_scheduling_can_be_renamed(cloud):
    client = cloud.member()
    body = {"server": {"name": "early", "flavorRef": "1", "imageRef": cloud.image_id, "networks": "auto"}}
    sid = client.post("/compute/v2.1/servers", body, format="json",
                      HTTP_OPENSTACK_API_VERSION="compute 2.37").json()["server"]["id"]
    response = cloud.put(client, f"servers/{sid}", {"server": {"name": "renamed"}})
    assert response.status_code == 200 and response.json()["server"]["name"] == "renamed"
    assert cloud.show(client, sid)["name"] == "renamed"


def test_down_cell_servers_are_stubs_from_2_69_and_left_out_before(cloud, monkeypatch):
    # given servers in both cells and cell2 not answering
    client = cloud.member()
    up = cloud.create_server(client, "up", availability_zone="az1")["id"]
    down = cloud.create_server(client, "down", availability_zone="az2")["id"]
    import servers.selectors as selectors
    from cells import scatter

    real = scatter.scatter_gather
    cell2 = cloud.cells["cell2"].uuid

    def cell2_times_out(fn, cell_list=None, **kw):
        results = real(fn, cell_list, **kw)
        if cell2 in results:
            results[cell2] = scatter.CellFailure(cell2, "timeout")
        return results

    monkeypatch.setattr(selectors, "scatter_gather", cell2_times_out)
    # then 2.69 lists the cell2 server as an UNKNOWN stub
    detail = {s["id"]: s for s in cloud.get(client, "servers/detail", version="2.69").json()["servers"]}
    assert detail[up]["status"] == "ACTIVE"
    assert detail[down]["status"] == "UNKNOWN" and "name" not in detail[down]
    brief = {s["id"]: s for s in cloud.get(client, "servers", version="2.69").json()["servers"]}
    assert brief[down]["status"] == "UNKNOWN"
    # and 2.68 leaves it out
    assert [s["id"] for s in cloud.get(client, "servers/detail", version="2.68").json()["servers"]] == [up]


def test_pinned_zone_and_scheduler_hints_are_shown_from_their_microversions(cloud):
    client = cloud.member()
    sid = cloud.create_server(client, "hinted", availability_zone="az2", hints={"foo": "bar"})["id"]
    shown = cloud.show(client, sid, version="2.100")
    assert shown["pinned_availability_zone"] == "az2"
    assert shown["scheduler_hints"] == {"foo": "bar"}
    older = cloud.show(client, sid, version="2.95")
    assert "pinned_availability_zone" not in older and "scheduler_hints" not in older


def test_changes_since_also_lists_servers_deleted_since(cloud):
    client = cloud.member()
    keep = cloud.create_server(client, "keep")["id"]
    gone = cloud.create_server(client, "gone")["id"]
    cloud.delete(client, f"servers/{gone}")
    listed = cloud.get(client, "servers/detail?changes-since=2000-01-01T00:00:00Z").json()["servers"]
    assert {s["id"]: s["status"] for s in listed} == {keep: "ACTIVE", gone: "DELETED"}
    assert [s["id"] for s in cloud.get(client, "servers").json()["servers"]] == [keep]


def test_az_node_form_and_hypervisor_hostname_target_a_node(cloud):
    admin = cloud.admin()
    by_node = cloud.create_server(admin, "by-node", availability_zone="az2::compute4")["id"]
    assert cloud.instance(by_node).node == "compute4"
    by_hv = cloud.create_server(admin, "by-hv", hypervisor_hostname="compute1", version="2.74")["id"]
    assert cloud.instance(by_hv).host == "compute1"
    # members may not pick hosts
    cloud.create_server(cloud.member(), "nope", host="compute1", version="2.74", expect=403)
    cloud.create_server(cloud.member(), "nope", availability_zone="az1::compute1", expect=403)


def test_show_in_a_down_cell_is_a_stub_from_2_69_and_503_before(cloud, monkeypatch):
    client = cloud.member()
    sid = cloud.create_server(client, "far", availability_zone="az2")["id"]
    import contextlib

    import servers.selectors as selectors
    from cloudcore.core.exceptions import CellDown

    real = selectors.target_cell

    @contextlib.contextmanager
    def cell2_down(cell):
        if getattr(cell, "name", cell) == "cell2":
            raise CellDown(cell="cell2")
        with real(cell):
            yield

    monkeypatch.setattr(selectors, "target_cell", cell2_down)
    stub = cloud.get(client, f"servers/{sid}", version="2.69")
    assert stub.status_code == 200 and stub.json()["server"]["status"] == "UNKNOWN"
    assert stub.json()["server"]["flavor"]["original_name"] == "m1.tiny"
    assert stub.json()["server"]["OS-EXT-AZ:availability_zone"] == "az2"
    assert cloud.get(client, f"servers/{sid}", version="2.68").status_code == 503
    assert cloud.delete(client, f"servers/{sid}").status_code == 503


def test_unknown_list_parameters_are_400_from_2_75(cloud):
    client = cloud.member()
    assert cloud.get(client, "servers?whatever=1", version="2.74").status_code == 200
    response = cloud.get(client, "servers?whatever=1", version="2.75")
    assert response.status_code == 400 and "whatever" in response.json()["badRequest"]["message"]
    assert cloud.get(client, "servers/detail?vm_state=active&host=x", version="2.75").status_code == 200


def test_a_second_delete_while_the_first_runs_is_accepted_and_does_nothing_more(cloud):
    from cells.context import target_cell
    from cells.models import InstanceMapping
    from servers.choices import TaskState
    from servers.models import Instance

    client = cloud.member()
    sid = cloud.create_server(client, "twice")["id"]
    # given a delete under way (its terminate not yet run on the host)
    with target_cell(InstanceMapping.objects.get(instance_uuid=sid).cell):
        Instance.objects.filter(uuid=sid).update(task_state=TaskState.DELETING)
    # when the client deletes it again (as Tempest's clean-ups do), Nova's answer: accepted
    assert cloud.delete(client, f"servers/{sid}").status_code == 204
    # then nothing more was started: no second delete action, the server still deleting
    actions = cloud.get(client, f"servers/{sid}/os-instance-actions").json()["instanceActions"]
    assert [a["action"] for a in actions] == ["create"]
    assert cloud.show(cloud.admin(), sid)["OS-EXT-STS:task_state"] == "deleting"

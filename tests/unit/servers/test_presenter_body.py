"""``present_server`` builds a body with a function written once per set of shown fields
(``presenter._body_function``); whatever the microversion, the reader's policy answers and the row,
that body is the field table read plainly: every field of ``SERVER_FIELDS`` that exists at the
version and whose condition holds, in table order, with its getter's value."""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from cloudcore.core.context import RequestContext
from servers import presenter
from servers.models import Instance
from servers.presenter import SERVER_FIELDS, View, present_server
from servers.selectors import ServerRecord
from servers.status import status_from_state

RULES = ("os_compute_api:os-extended-server-attributes", "os_compute_api:servers:show:host_status",
         "os_compute_api:servers:show:flavor-extra-specs")
VERSIONS = [(2, minor) for minor in range(1, presenter.MAX[1] + 1)]


def _data(vm_state: str, task_state: str | None) -> dict[str, Any]:
    when = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    return {
        "id": 1, "uuid": "u-1", "display_name": "vm", "project_id": "p", "user_id": "u", "metadata": {"a": "1"},
        "host": "h1", "node": "n1", "image_ref": "img",
        "system_metadata": {"image_os_distro": "x", "image_min_ram": "1"},
        "flavor": {"flavorid": "f1", "vcpus": 1, "memory_mb": 64, "root_gb": 1, "name": "tiny",
                   "extra_specs": {"k": "v"}},
        "created_at": when, "updated_at": None, "access_ip_v4": "10.0.0.1", "access_ip_v6": None,
        "auto_disk_config": True, "progress": 40, "availability_zone": "az1", "config_drive": "",
        "key_name": None, "launched_at": when, "terminated_at": None, "reservation_id": "r-1", "launch_index": 0,
        "hostname": "vm", "kernel_id": "", "ramdisk_id": "", "root_device_name": "/dev/vda", "user_data": None,
        "vm_state": vm_state, "task_state": task_state, "power_state": 1, "locked": False,
        "display_description": "d", "trusted_certs": None, "locked_reason": None,
    }


def _view(version: tuple[int, int], allowed: bool, data: dict[str, Any], *, groups: tuple[str, ...],
          fault: dict[str, Any] | None) -> View:
    checks: dict[Any, Any] = {(rule, "p"): allowed for rule in RULES}
    checks["base_url"] = "http://cloud/compute"
    record = ServerRecord(uuid="u-1", instance=Instance(**data))
    return View(record, record.instance.__dict__, version, RequestContext(user_id="u", project_id="p"), {"net": []},
                [{"id": "v", "delete_on_termination": False}], ["t"], fault, "UP",
                {"availability_zone": "az1", "scheduler_hints": {"a": ["b"]}}, groups, checks,
                status_from_state(data["vm_state"], data["task_state"], version), "http://cloud/compute", "p")


@pytest.mark.parametrize("allowed", [True, False])
@pytest.mark.parametrize(("vm_state", "task_state", "groups", "fault"), [
    ("active", None, ("default",), None),
    ("active", "rebooting", (), None),  # progress shown
    ("error", None, (), {"code": 500, "created": "2026-01-02T03:04:05Z", "message": "boom"}),
])
def test_the_written_body_is_the_field_table_read_plainly(
        allowed: bool, vm_state: str, task_state: str | None, groups: tuple[str, ...],
        fault: dict[str, Any] | None) -> None:
    for version in VERSIONS:
        # given a row and a reader whose policy answers are known
        view = _view(version, allowed, _data(vm_state, task_state), groups=groups, fault=fault)
        expected = {f.name: f.getter(view) for f in SERVER_FIELDS
                    if f.min_version <= version <= f.max_version and (f.when is None or f.when(view))}
        # when present_server builds it (the written function of its fields)
        body = present_server(view.record, version=version, actor=view.actor, addresses=view.addresses,
                              volumes=view.volumes, tags=view.tags, fault=fault, host_status="UP",
                              spec=view.spec, security_groups=list(groups), checks=dict(view.checks or {}))
        # then it is the table's body, keys in the same order
        assert list(body.items()) == list(expected.items()), version
        # and a list's entry is the same body less server_groups (a show's field only)
        listed = present_server(view.record, version=version, actor=view.actor, addresses=view.addresses,
                                volumes=view.volumes, tags=view.tags, fault=fault, host_status="UP",
                                spec=view.spec, security_groups=list(groups), checks=dict(view.checks or {}),
                                listing=True)
        assert list(listed.items()) == [(k, v) for k, v in expected.items() if k != "server_groups"], version


@pytest.mark.parametrize("allowed", [True, False])
def test_a_row_of_the_columns_its_shown_fields_read_gives_the_whole_rows_body(allowed: bool) -> None:
    for version in VERSIONS:
        # given a reader whose policy answers are known, and a whole row's list entry
        data = _data("active", "rebooting")
        view = _view(version, allowed, data, groups=("default",), fault=None)
        whole = present_server(view.record, version=version, actor=view.actor, host_status="UP", spec=view.spec,
                               checks=dict(view.checks or {}), listing=True)
        # when the row is read with only the columns of the fields the reader's list shows (as
        # list_columns gives them to server_list), the others deferred
        columns = sorted(presenter._columns_of(presenter._fields_shown(view, True)) | {"id"})
        row = Instance.from_db("default", columns, [data[c] for c in columns])
        entry = present_server(ServerRecord(uuid="u-1", instance=row), version=version, actor=view.actor,
                               host_status="UP", spec=view.spec, checks=dict(view.checks or {}), listing=True)
        # then its entry is the whole row's, read from the row's own columns (a deferred one would be
        # loaded from the database, which a unit test has not), and an administrator's attributes'
        # columns are read only for a reader who may see them
        assert list(entry.items()) == list(whole.items()), version
        if version >= (2, 3):
            assert ("user_data" in columns) is allowed, version


def test_rows_sharing_their_flavor_and_system_metadata_objects_each_get_their_own_entry() -> None:
    # given rows read as a list page reads them (RawRows' shared_json: one flavor and one system
    # metadata object for the rows of equal stored text, the same loaded columns), of two projects
    # whose reader may see the flavor's extra specs in one only, with two images
    flavor = {"flavorid": "f1", "vcpus": 2, "memory_mb": 64, "root_gb": 1, "name": "small", "extra_specs": {"k": "v"}}
    sysmeta = {"image_os_distro": "x", "image_min_ram": "1"}
    rows = []
    for i, (project, image) in enumerate((("p", "img-a"), ("q", "img-a"), ("p", "img-b"), ("q", "img-b"))):
        data = {**_data("active", None), "uuid": f"u-{i}", "project_id": project, "image_ref": image,
                "flavor": flavor, "system_metadata": sysmeta}
        rows.append(data)
    columns = sorted(rows[0])
    loaded = frozenset(columns)
    actor = RequestContext(user_id="u", project_id="p")
    answers = {**{(rule, "p"): True for rule in RULES}, **{(rule, "q"): False for rule in RULES}}
    for version in VERSIONS:
        # when the page's entries are made with one checks dict for them all
        page: dict[Any, Any] = {**answers, "base_url": "http://cloud/compute"}
        entries = [present_server(ServerRecord(uuid=data["uuid"], instance=Instance.from_db(
            "default", columns, [data[c] for c in columns]), loaded=loaded), version=version, actor=actor,
            host_status="UP", checks=page, listing=True) for data in rows]
        # then each is the entry of its row made alone: its own image, its project's flavor view
        alone = [present_server(ServerRecord(uuid=data["uuid"], instance=Instance(**data)), version=version,
                                actor=actor, host_status="UP", listing=True,
                                checks={**answers, "base_url": "http://cloud/compute"}) for data in rows]
        assert entries == alone, version
        assert [e["image"]["id"] for e in entries] == ["img-a", "img-a", "img-b", "img-b"], version
        if version >= (2, 47):
            assert ["extra_specs" in e["flavor"] for e in entries] == [True, False, True, False], version

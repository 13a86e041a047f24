"""A list page (and a server's update) reads only the keys of each request spec that a body shows,
in SQL (``servers.selectors.request_spec_keys_of``); a show reads the whole spec. The values must
come out as the whole spec's: a zone JSON ``null``, absent or a string JSON would read as
something else ("123", "null"), hints holding nested objects and lists, unicode and an integer
beyond 64 bits, hints ``null``, a group with its members."""
from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])

HINTS = {"nested": {"a": [1, {"b": "ü ☃ \"q\""}], "e": {}}, "big": 2 ** 70 + 1, "list": ["x", None, True, 1.5],
         "s": "null"}


def _specs(made: list[str], group_uuid: str) -> dict[str, tuple[dict[str, Any] | None, Any, Any]]:
    """``{uuid: (changes to its spec or None to delete it, pinned zone shown, hints shown)}``;
    a change's ``...`` value removes the key."""
    return {
        made[0]: ({"availability_zone": ..., "scheduler_hints": HINTS}, None, HINTS),
        made[1]: ({"availability_zone": None, "scheduler_hints": None}, None, {}),
        made[2]: ({"availability_zone": "123", "scheduler_hints": ...}, "123", {}),
        made[3]: ({"availability_zone": "null", "scheduler_hints": {"group": group_uuid},
                   "instance_group": {"uuid": group_uuid, "members": ["m"] * 50, "policy": "affinity"}},
                  "null", {"group": group_uuid}),
        made[4]: (None, None, {}),
    }


def test_a_page_shows_each_spec_key_as_stored(cloud: Any) -> None:
    from scheduling.models import RequestSpec

    # given servers whose request specs hold a zone absent, null, "123" and "null", hints that are
    # nested, unicode, beyond 64 bits, null or absent, a group, and a server with no spec at all
    member = cloud.member()
    group = cloud.post(member, "os-server-groups", {"server_group": {"name": "g", "policies": ["affinity"]}})
    group_uuid = group.json()["server_group"]["id"]
    made = [cloud.create_server(member, f"vm-{i}", networks="none")["id"] for i in range(5)]
    expected = _specs(made, group_uuid)
    for uuid, (changes, _zone, _hints) in expected.items():
        row = RequestSpec.objects.get(instance_uuid=uuid)
        if changes is None:
            row.delete()
            continue
        spec = {**row.spec, **changes}
        row.set_spec({key: value for key, value in spec.items() if value is not ...})
        row.save()
    for version in ("2.96", "2.100", "latest"):
        # when the detail list is read
        listed = {s["id"]: s for s in cloud.get(member, "servers/detail", version=version).json()["servers"]}
        assert set(listed) == set(made)
        for uuid, (_changes, zone, hints) in expected.items():
            server = listed[uuid]
            # then each server shows its spec's zone and hints as stored, as its show does
            assert server["pinned_availability_zone"] == zone, (version, uuid)
            if version != "2.96":
                assert server["scheduler_hints"] == hints, (version, uuid)
                assert type(server["scheduler_hints"].get("big")) is not float
            shown = cloud.show(member, uuid, version=version)
            groups = shown.pop("server_groups")
            assert groups == ([group_uuid] if uuid == made[3] else [])
            assert server == shown, (version, uuid)
    # and an update's body (its spec read as a page's) shows the group as the show does
    for uuid in (made[3], made[0], made[4]):
        updated = cloud.put(member, f"servers/{uuid}", {"server": {"name": "renamed"}}, version="latest")
        assert updated.status_code == 200, updated.content
        body = updated.json()["server"]
        assert body["server_groups"] == ([group_uuid] if uuid == made[3] else [])
        assert body["scheduler_hints"] == expected[uuid][2]
        assert body["pinned_availability_zone"] == expected[uuid][1]


def _listed_columns_of_specs() -> dict[str, tuple[Any, Any, Any]]:
    """Every spec row's listed columns, and what ``RequestSpec.set_spec`` derives from its spec."""
    from scheduling.models import RequestSpec

    stale = {}
    for row in RequestSpec.objects.all():
        stored = (row.availability_zone, row.instance_group_uuid, row.scheduler_hints)
        row.set_spec(row.spec)
        if stored != (row.availability_zone, row.instance_group_uuid, row.scheduler_hints):
            stale[row.instance_uuid] = stored
    return stale


def test_a_page_shows_the_spec_as_the_last_write_left_it(cloud: Any) -> None:
    from cells.context import target_cell
    from hosts.models import Service

    # given a host of az2 in cell1 (cell2's hosts disabled: an unshelve stays in the server's cell),
    # a server pinned to az1 with hints, shelved and offloaded, and one pinned to az1 in a group
    cloud.add_host("compute5", cell="cell1", zone="az2")
    with target_cell(cloud.cells["cell2"]):
        Service.objects.update(disabled=True)
    member = cloud.member()
    group = cloud.post(member, "os-server-groups", {"server_group": {"name": "g", "policies": ["affinity"]}})
    group_uuid = group.json()["server_group"]["id"]
    moved = cloud.create_server(member, "moved", networks="none", version="2.91", availability_zone="az1",
                                hints=HINTS)["id"]
    unpinned = cloud.create_server(member, "unpinned", networks="none", version="2.91", availability_zone="az1",
                                   hints={"group": group_uuid})["id"]
    cloud.wait_for_status(member, moved, "ACTIVE", version="2.91")
    assert cloud.action(member, moved, {"shelve": None}, version="2.91").status_code == 202
    cloud.wait_for_status(member, moved, "SHELVED_OFFLOADED", version="2.91")
    listed = {s["id"]: s for s in cloud.get(member, "servers/detail", version="latest").json()["servers"]}
    assert listed[moved]["pinned_availability_zone"] == listed[unpinned]["pinned_availability_zone"] == "az1"
    # when the first is unshelved into az2 and the second unpinned by an update (2.104): each spec
    # rewritten by its own path
    unshelved = cloud.action(member, moved, {"unshelve": {"availability_zone": "az2"}}, version="2.91")
    assert unshelved.status_code == 202, unshelved.content
    cloud.wait_for_status(member, moved, "ACTIVE", version="2.91")
    updated = cloud.put(member, f"servers/{unpinned}", {"server": {"pinned_availability_zone": None}},
                        version="2.104")
    assert updated.status_code == 200, updated.content
    # then every spec's listed columns are those of its spec as last written
    assert _listed_columns_of_specs() == {}
    for version in ("2.96", "2.100", "latest"):
        # and a page shows each server's new zone (and its hints and group), as its show does
        listed = {s["id"]: s for s in cloud.get(member, "servers/detail", version=version).json()["servers"]}
        assert listed[moved]["pinned_availability_zone"] == "az2", version
        assert listed[unpinned]["pinned_availability_zone"] is None, version
        for uuid in (moved, unpinned):
            shown = cloud.show(member, uuid, version=version)
            shown.pop("server_groups", None)
            assert listed[uuid] == shown, (version, uuid)
        if version != "2.96":
            assert listed[moved]["scheduler_hints"] == HINTS
            assert listed[unpinned]["scheduler_hints"] == {"group": group_uuid}

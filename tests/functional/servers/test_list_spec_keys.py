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
        row.spec = {key: value for key, value in spec.items() if value is not ...}
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

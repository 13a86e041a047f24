"""Request schemas of the servers API per microversion (servers/api/schemas.py)."""
from __future__ import annotations

import pytest

from cloudcore.core.api.validation import ValidationFailed, validate
from servers.api.schemas import create_schema, update_schema


def _body(**server):
    return {"server": {"name": "vm", "flavorRef": "1", **server}}


@pytest.mark.parametrize("version, field, value, ok", [
    ((2, 1), "networks", [{"uuid": "x"}], True),
    ((2, 36), "networks", "auto", False),
    ((2, 37), "networks", "auto", True),
    ((2, 37), "networks", "some", False),
    ((2, 31), "networks", [{"uuid": "x", "tag": "t"}], False),
    ((2, 32), "networks", [{"uuid": "x", "tag": "t"}], True),
    ((2, 18), "description", "d", False),
    ((2, 19), "description", "d", True),
    ((2, 51), "tags", ["a"], False),
    ((2, 52), "tags", ["a"], True),
    ((2, 52), "tags", ["a/b"], False),
    ((2, 73), "host", "compute1", False),
    ((2, 74), "host", "compute1", True),
    ((2, 89), "hostname", "web-1", False),
    ((2, 90), "hostname", "web-1", True),
    ((2, 90), "hostname", "-bad", False),
    ((2, 1), "min_count", 0, False),
    ((2, 1), "accessIPv4", "10.0.0.300", False),
    ((2, 1), "accessIPv4", "10.0.0.3", True),
])
def test_create_fields_appear_at_their_microversion(version, field, value, ok):
    body = _body(**{field: value})
    if version >= (2, 37) and field != "networks":
        body["server"]["networks"] = "none"
    if ok:
        validate(body, create_schema(version))
    else:
        with pytest.raises(ValidationFailed):
            validate(body, create_schema(version))


def test_networks_required_from_2_37():
    validate(_body(), create_schema((2, 36)))
    with pytest.raises(ValidationFailed, match="networks"):
        validate(_body(), create_schema((2, 37)))


def test_update_fields_per_microversion():
    validate({"server": {"name": "n"}}, update_schema((2, 1)))
    with pytest.raises(ValidationFailed):
        validate({"server": {"description": "d"}}, update_schema((2, 18)))
    validate({"server": {"description": None}}, update_schema((2, 19)))
    with pytest.raises(ValidationFailed):
        validate({"server": {"hostname": "h"}}, update_schema((2, 89)))
    validate({"server": {"hostname": "h"}}, update_schema((2, 90)))

"""The API's JSON renderer (orjson) writes exactly the bytes DRF's own JSONRenderer writes."""
from __future__ import annotations

import datetime
import decimal
import uuid

import pytest
from django.utils.translation import gettext_lazy
from rest_framework.renderers import JSONRenderer

from cloudcore.core.api import views
from cloudcore.core.api.views import OpenStackJSONRenderer

UTC = datetime.UTC
PLUS_ONE = datetime.timezone(datetime.timedelta(hours=1))

SAME_BYTES = [
    {"servers": [{"id": "9e1f", "name": "caf\u00e9 \u2603 \U0001f600", "n": 3, "ok": True, "none": None,
                  "list": (1, 2), "nested": {"b": 1, "a": 2}}]},
    {"line": "a\u2028b\u2029c", "ctl": "\x00\x01\x1f\x7f\n\t\"\\/"},
    {"aware": datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
     "micro": datetime.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
     "naive": datetime.datetime(2026, 1, 2, 3, 4, 5, 600),
     "offset": datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=PLUS_ONE),
     "date": datetime.date(2026, 1, 2), "time": datetime.time(3, 4, 5, 6),
     "delta": datetime.timedelta(hours=1, microseconds=5)},
    {"decimal": decimal.Decimal("1.50"), "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
     "lazy": gettext_lazy("Server"), "bytes": b"raw", "set": {1}},
    {"floats": [0.0, -0.0, 0.5, 1e-4, 123.456, 1e15, 9999999999999998.0, 1e-5, 1.5e-7, 1e16, 2.5e22]},
    {"ints": [0, -1, 2**63 - 1, 2**64 - 1, 2**64, -(2**63) - 1]},
    {1: "int key", None: "none key", False: "bool key"},
    [],
    "a string",
    {"text with a float look": ":1e5, [0.00001", "mac": "fa:16:3e:58:c6:54", "hex": ["9e1", "1e5"]},
    [1e-300, -2.5e-9, 1e300, -1e16, 0.00001, [0.000012]],
    {"id": "9e1f000e-00e1-4e2e-be-e", "links": ["e-1", "x:e-1,"], "small": {"a": -7.5e-8}, "big": 3e20},
]


@pytest.mark.parametrize("data", SAME_BYTES)
def test_same_bytes_as_drf(data):
    # given a body, when both renderers write it, then the bytes are the same
    assert OpenStackJSONRenderer().render(data) == JSONRenderer().render(data)


def test_a_server_body_takes_orjson_s_path(monkeypatch):
    # a MAC address's ":3e:" is not taken for a float: no second encoding by DRF's renderer
    def no_fallback(*args, **kwargs):
        raise AssertionError("encoded by DRF's renderer")

    monkeypatch.setattr(JSONRenderer, "render", no_fallback)
    body = {"servers": [{"addresses": {"net": [{"OS-EXT-IPS-MAC:mac_addr": "fa:16:3e:58:c6:54"}]},
                         "id": "9e1f0000-0000-0000-0000-00000000001e", "progress": 0, "hostId": "3e5"}]}
    assert OpenStackJSONRenderer().render(body).startswith(b'{"servers":[{"addresses"')


def test_indented_answer_is_drf_s():
    # the browsable API asks for an indented body
    data = {"a": [1, {"b": 2}]}
    assert OpenStackJSONRenderer().render(data, renderer_context={"indent": 4}) == \
        JSONRenderer().render(data, renderer_context={"indent": 4})
    assert OpenStackJSONRenderer().render(data, "application/json; indent=2") == \
        JSONRenderer().render(data, "application/json; indent=2")


def test_no_body_and_unencodable_values_as_drf():
    assert OpenStackJSONRenderer().render(None) == b""
    with pytest.raises(TypeError):
        OpenStackJSONRenderer().render({"x": object()})


def test_the_exponents_searched_are_those_orjson_writes_otherwise(monkeypatch):
    # an orjson that writes 1e+16 as Python does: only a negative exponent is searched (a uuid's
    # "e1" is no candidate); one that writes 1e16: both
    assert views._other_float_notation(b'{"a":1.5e-7}')
    monkeypatch.setattr(views, "_EXPONENT", views._NEGATIVE_EXPONENT)
    assert not views._other_float_notation(b'{"a":1e16}')
    assert views._other_float_notation(b'{"a":[2e-9]}')
    monkeypatch.setattr(views, "_EXPONENT", views._ANY_EXPONENT)
    assert views._other_float_notation(b'{"a":1e16}')
    assert views._other_float_notation(b'{"a":[2e-9]}')
    assert not views._other_float_notation(b'{"a":"9e16"}')

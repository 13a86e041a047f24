"""The JSON field read with orjson: the values ``json.loads`` gives, Django's reading for what
orjson refuses, and migrations that see Django's own ``JSONField``."""
from __future__ import annotations

import json
import math

import pytest
from django.db import models

from cloudcore.core.models import JSONField

STORED = [
    '{"name": "m1.small", "vcpus": 1, "rxtx_factor": 1.0, "extra_specs": {"hw:cpu_policy": "dedicated"}}',
    '{"b": 1, "a": [0.1, 1e-7, 2.5e22, -0.0, 1234567890123456789], "c": null, "d": true}',
    '{"caf\\u00e9": "\\u2603 \\ud83d\\ude00", "esc": "\\"\\\\/\\n\\t"}',
    '[]', '{}', '"text"', '3', '1.5',
]


@pytest.mark.parametrize("text", STORED)
def test_reads_what_json_reads(text):
    got = JSONField().from_db_value(text, None, None)
    assert got == json.loads(text)
    assert json.dumps(got) == json.dumps(json.loads(text))  # key order and float values alike


def test_what_orjson_refuses_is_read_as_django_reads_it():
    field = JSONField()
    assert math.isnan(field.from_db_value('{"x": NaN}', None, None)["x"])
    for edge in (2**63, 2**64 - 1, -(2**63)):  # 64-bit integers are exact (beyond: a float, documented)
        assert type(field.from_db_value(f"[{edge}]", None, None)[0]) is int
    assert field.from_db_value("not json", None, None) == "not json"  # Django gives the text back
    assert field.from_db_value(None, None, None) is None


def test_migrations_see_djangos_json_field():
    _, path, _, kwargs = JSONField(null=True, blank=True).deconstruct()
    assert path == "django.db.models.JSONField"
    assert kwargs == models.JSONField(null=True, blank=True).deconstruct()[3]

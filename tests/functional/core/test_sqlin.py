"""``values_in``: the same rows as ``__in`` with a list, one statement, nothing for no values."""
from __future__ import annotations

import orjson
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from cloudcore.core.sqlin import values_in
from identity.models import Project

pytestmark = pytest.mark.django_db


def test_values_in_selects_what_a_list_selects() -> None:
    # given projects, some of them asked for, with quotes, a backslash, non-ASCII text, a value no
    # row has and thousands of others
    for name in ("a", "b", "c'", "d", 'e"\\', "f\u00e9\u2603", "[g]"):
        Project.objects.create(name=name)
    wanted = ["a", "c'", 'e"\\', "f\u00e9\u2603", "[g]", "nobody", *(f"x{i}" for i in range(3000))]
    # when they are looked up with values_in and with a plain list
    with CaptureQueriesContext(connection) as queries:
        found = sorted(Project.objects.filter(name__in=values_in(wanted)).values_list("name", flat=True))
    # then the same rows, in one statement
    assert found == sorted(Project.objects.filter(name__in=wanted).values_list("name", flat=True))
    assert found == sorted(["a", "c'", 'e"\\', "f\u00e9\u2603", "[g]"])
    assert len(queries) == 1
    if connection.vendor == "sqlite":  # one parameter, a JSON array (sorted), however many values
        assert "json_each" in queries[0]["sql"]
        sent = Project.objects.filter(name__in=values_in(wanted)).query.sql_with_params()[1]
        assert sent == (orjson.dumps(sorted(wanted)).decode(),)
    # and no values select nothing, without a statement
    with CaptureQueriesContext(connection) as queries:
        assert list(Project.objects.filter(name__in=values_in([]))) == []
    assert len(queries) == 0

"""From 2.102 every compute GET checks its query string: a parameter the endpoint does not take is
a 400 (below 2.102 it is ignored), while the parameters it does take still work."""
from __future__ import annotations

import inspect
import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from cloudcore.core.api.views import STRICT_QUERY_FROM, ComputeAPIView

from .conftest import ALL_DATABASES, Personas

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES)

#: lists strict since 2.75 already (Nova's 2.75 clean-up): unknown parameters are ignored only below it
STRICT_SINCE_275 = ("/limits", "/os-keypairs", "/flavors", "/servers", "/os-quota-sets")

#: (persona, path with the parameters the endpoint takes)
ENDPOINTS = [
    ("member", "/compute/v2.1/os-availability-zone"),
    ("admin", "/compute/v2.1/os-availability-zone/detail"),
    ("admin", "/compute/v2.1/os-aggregates"),
    ("admin", "/compute/v2.1/os-services?host=compute1&binary=nova-compute"),
    ("admin", "/compute/v2.1/os-hypervisors?with_servers=true"),
    ("admin", "/compute/v2.1/os-migrations?status=finished&limit=5&changes-since=2020-01-01T00:00:00Z"),
    ("member", "/compute/v2.1/limits"),
    ("admin", "/compute/v2.1/limits?tenant_id=demo"),
    ("member", "/compute/v2.1/os-keypairs?limit=5"),
    ("member", "/compute/v2.1/os-server-groups?limit=5&offset=0"),
    ("admin", "/compute/v2.1/os-server-groups?all_projects=true"),
    ("admin", "/compute/v2.1/os-simple-tenant-usage?detailed=1"),
    ("member", "/compute/v2.1/flavors/detail?minRam=0&name=m1"),
    ("member", "/compute/v2.1/servers/detail?name=x&limit=1"),
    ("admin", "/compute/v2.1/os-quota-sets/demo/detail"),
]


@pytest.mark.parametrize(("persona", "path"), ENDPOINTS)
def test_unknown_query_parameter_is_400_from_2_102(personas: Personas, path: str, persona: str) -> None:
    bogus = path + ("&" if "?" in path else "?") + "bogus=1"
    # below 2.102 an unknown parameter is ignored (below 2.75 for the lists strict since then)
    lax = "2.74" if any(part in path for part in STRICT_SINCE_275) else "2.101"
    assert personas.client(persona, lax).get(bogus).status_code == 200
    # from 2.102 the parameters the endpoint takes still work
    assert personas.client(persona, "2.102").get(path).status_code == 200
    # and an unknown one is Nova's schema 400
    response = personas.client(persona, "2.102").get(bogus)
    assert response.status_code == 400
    assert "'bogus' was unexpected" in response.json()["badRequest"]["message"]


def test_a_show_takes_no_query_parameters_from_2_102(personas: Personas) -> None:
    client = personas.client("member", "2.102")
    assert client.get("/compute/v2.1/os-keypairs/missing?user_id=x&colour=red").status_code == 400
    assert personas.client("member", "2.74").get("/compute/v2.1/os-keypairs/missing?colour=red").status_code == 404


def _compute_get_views() -> list[type[ComputeAPIView]]:
    found: list[type[ComputeAPIView]] = []

    def walk(patterns: list[URLPattern | URLResolver]) -> None:
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                walk(pattern.url_patterns)
                continue
            cls = getattr(pattern.callback, "cls", None)
            if cls and issubclass(cls, ComputeAPIView) and hasattr(cls, "get") and cls not in found:
                found.append(cls)
    walk(get_resolver().url_patterns)
    return found


def test_every_parameter_a_handler_reads_is_declared() -> None:
    # a handler that reads request.query_params["x"] (or .get("x")) must declare "x", or a 2.102
    # client could not send it
    read = re.compile(r"""query_params(?:\.get\(|\[)\s*["']([\w:.-]+)["']""")
    views = _compute_get_views()
    assert len(views) > 50
    for cls in views:
        if cls.query_parameters is None or (cls.available_until or STRICT_QUERY_FROM) < STRICT_QUERY_FROM:
            continue  # checks its own, or gone before 2.102
        names = set(read.findall(inspect.getsource(cls)))
        assert names <= cls.query_parameters, (cls.__name__, names - cls.query_parameters)

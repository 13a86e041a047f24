"""Never a 500 for a client's mistake: odd bodies and parameters on every write endpoint here."""
from __future__ import annotations

from typing import Any

import pytest

from scheduling.services import aggregates
from servers.models import Flavor

from .conftest import ALL_DATABASES, Personas

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES)

ODD_BODIES: list[Any] = [
    None, [], "text", 7, {}, {"x": 1}, {"flavor": []}, {"flavor": {"name": 1}}, {"keypair": None},
    {"aggregate": {"name": None}}, {"extra_specs": {"k" * 300: "v"}}, {"addTenantAccess": None},
    {"add_host": {"host": 5}}, {"set_metadata": {"metadata": []}}, {"project": {"name": ["x"]}},
    {"user": {"name": "u", "enabled": "yes"}}, {"role": {"name": "bad name!"}},
    {"auth": {"identity": {"methods": ["password"], "password": {"user": []}}}},
    {"auth": {"identity": {"methods": ["kerberos"]}}},
]
WRITES = [
    ("post", "/compute/v2.1/flavors"), ("put", "/compute/v2.1/flavors/1"),
    ("post", "/compute/v2.1/flavors/1/action"), ("post", "/compute/v2.1/flavors/1/os-extra_specs"),
    ("put", "/compute/v2.1/flavors/1/os-extra_specs/k"), ("post", "/compute/v2.1/os-keypairs"),
    ("post", "/compute/v2.1/os-aggregates"), ("put", "/compute/v2.1/os-aggregates/AGG"),
    ("post", "/compute/v2.1/os-aggregates/AGG/action"), ("post", "/identity/v3/auth/tokens"),
    ("post", "/identity/v3/projects"), ("post", "/identity/v3/users"), ("post", "/identity/v3/roles"),
]


@pytest.mark.parametrize(("method", "path"), WRITES)
def test_odd_bodies_never_500(personas: Personas, cells: Any, method: str, path: str) -> None:
    Flavor.objects.create(flavorid="1", name="m1.tiny", vcpus=1, memory_mb=512, root_gb=1)
    agg = aggregates.aggregate_create(name="agg")
    client = personas.client("admin", "latest")
    for body in ODD_BODIES:
        response = getattr(client, method)(path.replace("AGG", str(agg.id)), body, format="json")
        assert response.status_code < 500, (body, response.content)
        if response.status_code >= 400:
            assert response.json()


@pytest.mark.parametrize("query", ["limit=-1", "limit=x", "marker=", "minDisk=-3", "sort_dir=up", "is_public=maybe",
                                   "user_id=&limit=1", "tenant_id="])
@pytest.mark.parametrize("path", ["/compute/v2.1/flavors", "/compute/v2.1/flavors/detail",
                                  "/compute/v2.1/os-keypairs", "/compute/v2.1/limits"])
def test_odd_query_parameters_never_500(personas: Personas, cells: Any, path: str, query: str) -> None:
    for version in ("2.1", "2.35", "latest"):
        response = personas.client("admin", version).get(f"{path}?{query}")
        assert response.status_code < 500, (version, response.content)

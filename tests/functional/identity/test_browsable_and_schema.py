"""The DRF browsable API on the OpenStack endpoints and the OpenAPI document of /api/schema/."""
from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from servers.models import Flavor
from tests.apihelpers import auth_client, make_identity

pytestmark = pytest.mark.django_db


def test_browsable_api_with_a_token() -> None:
    # given a member's token and a flavor
    Flavor.objects.create(flavorid="1", name="m1.tiny", vcpus=1, memory_mb=512, root_gb=1)
    user, project = make_identity("alice")
    client = auth_client(user, project)
    # when the endpoint is asked for HTML
    response = client.get("/compute/v2.1/flavors", HTTP_ACCEPT="text/html")
    # then DRF's browsable page renders the JSON
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    assert b"m1.tiny" in response.content


def test_browsable_api_in_a_logged_in_browser() -> None:
    # given a browser session of a user logged in to the console (no X-Auth-Token)
    Flavor.objects.create(flavorid="1", name="m1.tiny", vcpus=1, memory_mb=512, root_gb=1)
    user, _ = make_identity("alice")
    client = APIClient()
    client.force_login(user)
    response = client.get("/compute/v2.1/flavors", HTTP_ACCEPT="text/html")
    assert response.status_code == 200 and b"m1.tiny" in response.content
    assert client.get("/identity/v3/auth/projects").json()["projects"][0]["name"] == "demo"


def test_without_credentials_the_browser_gets_401() -> None:
    response = APIClient().get("/compute/v2.1/flavors", HTTP_ACCEPT="text/html")
    assert response.status_code == 401


def test_openapi_schema_covers_the_endpoints() -> None:
    response = APIClient().get("/api/schema/?format=json")
    assert response.status_code == 200
    schema: dict[str, Any] = response.json()
    assert schema["openapi"].startswith("3.")
    paths = schema["paths"]
    for path in ("/compute/v2.1/flavors", "/compute/v2.1/flavors/{flavor_id}/os-extra_specs/{key}",
                 "/compute/v2.1/os-keypairs", "/compute/v2.1/limits", "/compute/v2.1/os-aggregates/{aggregate_id}",
                 "/compute/v2.1/os-availability-zone/detail"):
        assert path in paths, path
    assert any(p.startswith("/identity/v3/auth/tokens") for p in paths)
    assert not any(p.endswith("/.") for p in paths)
    operation_ids = [op["operationId"] for item in paths.values() for op in item.values() if isinstance(op, dict)
                     and "operationId" in op]
    assert len(operation_ids) == len(set(operation_ids))
    assert schema["components"]["securitySchemes"]["keystoneToken"]["name"] == "X-Auth-Token"


def test_spectacular_validate_command_passes() -> None:
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("spectacular", "--validate", stdout=out)
    assert "openapi" in out.getvalue()

"""Fixtures for the compute resource API tests (flavors, keypairs, limits, aggregates, zones)."""
from __future__ import annotations

from typing import Any

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from servers.models import Flavor
from tests.apihelpers import auth_client, make_identity

ALL_DATABASES = ["default", "cell0", "cell1", "cell2"]


@pytest.fixture(autouse=True)
def _public_url() -> Any:
    with override_settings(PUBLIC_URL="http://testserver"):
        yield


class Personas:
    """The six personas of the policy matrix and clients for them (``clients(version)``)."""

    def __init__(self) -> None:
        self.admin = make_identity("admin", project="admin", roles=["admin"])
        self.project_admin = make_identity("demo-admin", project="demo", roles=["admin"])
        self.member = make_identity("demo", project="demo", roles=["member"])
        self.reader = make_identity("demo-reader", project="demo", roles=["reader"])
        self.other = make_identity("demo2", project="demo2", roles=["member"])

    def client(self, persona: str, version: str | None = None) -> APIClient:
        if persona == "anonymous":
            client = APIClient()
            if version:
                client.credentials(HTTP_OPENSTACK_API_VERSION=f"compute {version}")
            return client
        user, project = getattr(self, persona)
        return auth_client(user, project, version=version)


PERSONAS = ("admin", "project_admin", "member", "reader", "other", "anonymous")


@pytest.fixture
def personas(db: None) -> Personas:
    return Personas()


@pytest.fixture
def flavors(db: None) -> list[Flavor]:
    return [
        Flavor.objects.create(flavorid="1", name="m1.tiny", vcpus=1, memory_mb=512, root_gb=1),
        Flavor.objects.create(flavorid="2", name="m1.small", vcpus=1, memory_mb=2048, root_gb=20),
        Flavor.objects.create(flavorid="3", name="m1.medium", vcpus=2, memory_mb=4096, root_gb=40, swap=512),
        Flavor.objects.create(flavorid="p1", name="private", vcpus=1, memory_mb=256, root_gb=1, is_public=False),
    ]

"""The scheduling pages of the Django admin render and are read-only."""
from __future__ import annotations

import pytest
from django.test import Client

from scheduling.services import aggregates
from tests.conftest import ALL_DATABASES

from .conftest import make_provider

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES)


@pytest.fixture
def staff_client():
    from identity.models import User

    user = User.objects.create_superuser("root-admin", "pw")
    client = Client()
    client.force_login(user)
    return client


def test_admin_pages_render(staff_client, cells):
    rp = make_provider("node-admin")
    aggregates.aggregate_create(name="agg-admin", availability_zone="az1")
    for path in ("/admin/scheduling/resourceprovider/", f"/admin/scheduling/resourceprovider/{rp.id}/change/",
                 "/admin/scheduling/aggregate/", "/admin/scheduling/allocation/", "/admin/scheduling/consumer/",
                 "/admin/scheduling/requestspec/"):
        resp = staff_client.get(path)
        assert resp.status_code == 200, path
    assert b"node-admin" in staff_client.get("/admin/scheduling/resourceprovider/").content
    assert b"az1" in staff_client.get("/admin/scheduling/aggregate/").content
    assert staff_client.get("/admin/scheduling/resourceprovider/add/").status_code == 403

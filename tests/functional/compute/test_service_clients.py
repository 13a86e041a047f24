"""The compute agents' way to the other services: HTTP as the service user, in-process here."""
from __future__ import annotations

import pytest

from cells.isolation import IsolationViolation, compute_agent
from compute.clients.session import ServiceCallFailed, expect, service_adapter

pytestmark = pytest.mark.django_db(databases="__all__")


def test_service_user_reads_placement_over_http_from_inside_a_compute_agent(cells):
    with compute_agent(cells["cell1"]):
        resp = service_adapter("placement").get("/resource_providers", microversion="1.14")
    assert resp.status_code == 200, resp.text
    assert "resource_providers" in resp.json()


def test_the_agent_itself_cannot_read_the_api_database(cells):
    from identity.models import Project

    with compute_agent(cells["cell1"]), pytest.raises(IsolationViolation, match="API database"):
        Project.objects.count()


def test_a_refused_call_raises_with_the_services_fault(cells):
    resp = service_adapter("placement").get("/resource_providers/not-a-provider")
    with pytest.raises(ServiceCallFailed, match="404"):
        expect(resp, 200, service="placement")

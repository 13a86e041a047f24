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


def test_a_call_on_a_connection_the_service_dropped_is_sent_again(cells):
    """A kept-alive connection that the web server closed just as the agent reused it fails with
    ConnectionError (RemoteDisconnected) before any view ran: the agent sends the call again."""
    import requests

    from compute.clients.session import service_session

    session = service_session().session
    real = session.get_adapter("http://")

    class DropsTheFirst(requests.adapters.BaseAdapter):
        sent = 0

        def send(self, request, **kwargs):  # type: ignore[no-untyped-def]
            DropsTheFirst.sent += 1
            if DropsTheFirst.sent == 1:
                raise requests.exceptions.ConnectionError("('Connection aborted.', RemoteDisconnected("
                                                          "'Remote end closed connection without response'))")
            return real.send(request, **kwargs)

        def close(self):  # type: ignore[no-untyped-def]
            pass

    service_adapter("placement").get("/resource_providers", microversion="1.14")  # the token, beforehand
    session.mount("http://", DropsTheFirst())
    try:
        resp = service_adapter("placement").get("/resource_providers", microversion="1.14")
    finally:
        session.mount("http://", real)
    assert resp.status_code == 200, resp.text
    assert DropsTheFirst.sent == 2

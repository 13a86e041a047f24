"""Neutron's ``binding-extended`` (``/v2.0/ports/{id}/bindings``): bodies, codes and the admin-only policy."""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.apihelpers import admin_client, auth_client, make_identity

pytestmark = pytest.mark.django_db

PORTS = "/network/v2.0/ports"


def bound_port(admin: APIClient, host: str = "src") -> dict:
    net = admin.post("/network/v2.0/networks", {"network": {"name": "n"}}, format="json").json()["network"]
    assert admin.post("/network/v2.0/subnets", {"subnet": {"network_id": net["id"], "cidr": "10.9.0.0/28"}},
                      format="json").status_code == 201
    port = admin.post(PORTS, {"port": {"network_id": net["id"], "device_id": "vm-1", "device_owner": "compute:nova",
                                       "binding:host_id": host}}, format="json")
    assert port.status_code == 201, port.content
    return port.json()["port"]


def test_a_bound_port_lists_its_active_binding() -> None:
    admin = admin_client()
    port = bound_port(admin)
    resp = admin.get(f"{PORTS}/{port['id']}/bindings")
    assert resp.status_code == 200, resp.content
    assert resp.json() == {"bindings": [{"host": "src", "vif_type": "ovs", "vif_details": {}, "vnic_type": "normal",
                                         "profile": {}, "status": "ACTIVE"}]}
    one = admin.get(f"{PORTS}/{port['id']}/bindings/src")
    assert one.status_code == 200 and one.json()["binding"]["status"] == "ACTIVE"
    assert admin.get(f"{PORTS}/{port['id']}/bindings/elsewhere").status_code == 404


def test_create_activate_and_delete_a_binding_as_a_move_does() -> None:
    admin = admin_client()
    port = bound_port(admin)
    url = f"{PORTS}/{port['id']}/bindings"
    created = admin.post(url, {"binding": {"host": "dst", "vnic_type": "normal", "profile": {"migrating_to": "dst"}}},
                         format="json")
    assert created.status_code == 201, created.content
    assert created.json()["binding"] == {"host": "dst", "vif_type": "ovs", "vif_details": {}, "vnic_type": "normal",
                                         "profile": {"migrating_to": "dst"}, "status": "INACTIVE"}
    assert admin.post(url, {"binding": {"host": "dst"}}, format="json").status_code == 409
    assert admin.post(url, {"binding": {"host": "src"}}, format="json").status_code == 409
    assert admin.get(f"{PORTS}/{port['id']}").json()["port"]["binding:host_id"] == "src"

    activated = admin.put(f"{url}/dst/activate", format="json")
    assert activated.status_code == 200, activated.content
    assert activated.json()["binding"]["status"] == "ACTIVE"
    assert admin.get(f"{PORTS}/{port['id']}").json()["port"]["binding:host_id"] == "dst"
    statuses = {b["host"]: b["status"] for b in admin.get(url).json()["bindings"]}
    assert statuses == {"src": "INACTIVE", "dst": "ACTIVE"}
    again = admin.put(f"{url}/dst/activate", format="json")
    assert again.status_code == 409 and again.json()["NeutronError"]["type"] == "Conflict"
    assert admin.put(f"{url}/nowhere/activate", format="json").status_code == 404

    assert admin.get(url, {"status": "INACTIVE"}).json()["bindings"][0]["host"] == "src"
    assert admin.delete(f"{url}/src").status_code == 204
    assert admin.delete(f"{url}/src").status_code == 404
    assert [b["host"] for b in admin.get(url).json()["bindings"]] == ["dst"]


def test_a_binding_on_an_unbound_port_is_its_active_one() -> None:
    admin = admin_client()
    port = bound_port(admin, host="")
    created = admin.post(f"{PORTS}/{port['id']}/bindings", {"binding": {"host": "h1"}}, format="json")
    assert created.status_code == 201 and created.json()["binding"]["status"] == "ACTIVE"
    assert admin.get(f"{PORTS}/{port['id']}").json()["port"]["binding:host_id"] == "h1"
    assert admin.delete(f"{PORTS}/{port['id']}/bindings/h1").status_code == 204
    assert admin.get(f"{PORTS}/{port['id']}").json()["port"]["binding:host_id"] == ""


def test_bad_bodies_and_unknown_ports() -> None:
    admin = admin_client()
    port = bound_port(admin)
    url = f"{PORTS}/{port['id']}/bindings"
    assert admin.post(url, {"binding": {}}, format="json").status_code == 400
    assert admin.post(url, {"binding": {"host": "h", "vif_type": "x"}}, format="json").status_code == 400
    assert admin.post(url, {"host": "h"}, format="json").status_code == 400
    assert admin.get(f"{PORTS}/no-such-port/bindings").status_code == 404


def test_only_admins_and_services_manage_bindings() -> None:
    admin = admin_client()
    port = bound_port(admin)
    user, project = make_identity("alice", project="demo", roles=["member"])
    member = auth_client(user, project)
    url = f"{PORTS}/{port['id']}/bindings"
    assert member.get(url).status_code == 403
    assert member.get(f"{url}/src").status_code == 403
    assert member.post(url, {"binding": {"host": "dst"}}, format="json").status_code == 403
    assert member.put(f"{url}/src/activate", format="json").status_code == 403
    denied = member.delete(f"{url}/src")
    assert denied.status_code == 403 and denied.json()["NeutronError"]["type"] == "HTTPForbidden"
    assert admin.get(url).json()["bindings"][0]["status"] == "ACTIVE"

"""Versioned notifications of flavor and keypair changes; Django admin pages of identity/policy."""
from __future__ import annotations

import pytest
from django.test import Client

from cloudcore.core.models import NotificationRecord
from identity.models import User

from .conftest import Personas

pytestmark = pytest.mark.django_db
PUBLIC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFSDIj1b61Zm/8oFq6rs4ssESlCX1P4s9wZtQhv5zI05 t@example"


def _events() -> list[str]:
    return list(NotificationRecord.objects.order_by("id").values_list("event_type", flat=True))


def test_flavor_notifications(personas: Personas) -> None:
    admin = personas.client("admin", "2.55")
    admin.post("/compute/v2.1/flavors", {"flavor": {"name": "n1", "ram": 1, "vcpus": 1, "disk": 0, "id": "n1"}},
               format="json")
    admin.put("/compute/v2.1/flavors/n1", {"flavor": {"description": "d"}}, format="json")
    admin.delete("/compute/v2.1/flavors/n1")
    assert _events() == ["flavor.create", "flavor.update", "flavor.delete"]
    update = NotificationRecord.objects.get(event_type="flavor.update").payload
    assert update["payload"]["nova_object.name"] == "FlavorPayload"
    assert update["payload"]["nova_object.data"]["description"] == "d"


def test_keypair_notifications(personas: Personas) -> None:
    client = personas.client("member", "2.2")
    # a key brought by the user is imported, one made by the cloud created (Nova's two events)
    client.post("/compute/v2.1/os-keypairs", {"keypair": {"name": "k", "public_key": PUBLIC_KEY}}, format="json")
    client.post("/compute/v2.1/os-keypairs", {"keypair": {"name": "made"}}, format="json")
    client.delete("/compute/v2.1/os-keypairs/k")
    assert _events() == ["keypair.import.start", "keypair.import.end", "keypair.create.start", "keypair.create.end",
                         "keypair.delete.start", "keypair.delete.end"]
    start = NotificationRecord.objects.get(event_type="keypair.import.start").payload["payload"]["nova_object.data"]
    assert start["public_key"] == PUBLIC_KEY and start["fingerprint"] is None
    end = NotificationRecord.objects.get(event_type="keypair.import.end").payload["payload"]["nova_object.data"]
    assert end["name"] == "k" and end["fingerprint"] and end["user_id"] == personas.member[0].id
    made = NotificationRecord.objects.get(event_type="keypair.create.start").payload["payload"]["nova_object.data"]
    assert made["name"] == "made" and made["public_key"] is None


def test_django_admin_lists_policy_rules_and_identity(personas: Personas) -> None:
    # given the cloud admin is a Django superuser (as demo_setup makes it)
    user: User = personas.admin[0]
    user.is_staff = user.is_superuser = True
    user.save()
    browser = Client()
    browser.force_login(user)
    rules = browser.get("/admin/identity/policyrule/?q=cross_cell")
    assert rules.status_code == 200
    assert b"compute:servers:resize:cross_cell" in rules.content and b"nobody" in rules.content
    for page in ("/admin/identity/project/", "/admin/identity/user/", "/admin/identity/role/",
                 f"/admin/identity/project/{personas.member[1].id}/permissions/"):
        assert browser.get(page).status_code == 200, page

"""Keypairs (import, generation below 2.92, types, user_id for admins, paging) and limits."""
from __future__ import annotations

import pytest
from django.test import override_settings

from servers.models import KeyPair

from .conftest import ALL_DATABASES, Personas

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES)

PUBLIC_KEY = ("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFSDIj1b61Zm/8oFq6rs4ssESlCX1P4s9wZtQhv5zI05 t@example")
FINGERPRINT = "f6:8f:5a:72:42:10:e2:eb:c0:26:02:c7:a2:e0:f8:03"  # ssh-keygen -l -E md5


def test_import_list_show_delete(personas: Personas) -> None:
    client = personas.client("member", "2.2")
    # when a key is imported at 2.2
    response = client.post("/compute/v2.1/os-keypairs", {"keypair": {"name": "k1", "public_key": PUBLIC_KEY}},
                           format="json")
    # then 201 with the MD5 fingerprint ssh-keygen shows, type ssh, no private key
    assert response.status_code == 201
    body = response.json()["keypair"]
    assert body["fingerprint"] == FINGERPRINT and body["type"] == "ssh" and "private_key" not in body
    assert body["user_id"] == personas.member[0].id
    listed = client.get("/compute/v2.1/os-keypairs").json()["keypairs"]
    assert listed == [{"keypair": {"name": "k1", "public_key": PUBLIC_KEY, "fingerprint": FINGERPRINT,
                                   "type": "ssh"}}]
    shown = client.get("/compute/v2.1/os-keypairs/k1").json()["keypair"]
    assert shown["deleted"] is False and shown["user_id"] == personas.member[0].id and "id" in shown
    # other users do not see it
    assert personas.client("other").get("/compute/v2.1/os-keypairs/k1").status_code == 404
    assert client.delete("/compute/v2.1/os-keypairs/k1").status_code == 204
    missing = client.get("/compute/v2.1/os-keypairs/k1")
    assert missing.status_code == 404
    assert missing.json()["itemNotFound"]["message"] == f"Keypair k1 not found for user {personas.member[0].id}"


def test_legacy_codes_at_21(personas: Personas) -> None:
    client = personas.client("member")
    response = client.post("/compute/v2.1/os-keypairs", {"keypair": {"name": "k1", "public_key": PUBLIC_KEY}},
                           format="json")
    assert response.status_code == 200 and "type" not in response.json()["keypair"]
    assert client.delete("/compute/v2.1/os-keypairs/k1").status_code == 202


def test_duplicate_and_invalid_keys(personas: Personas) -> None:
    client = personas.client("member", "2.2")
    body = {"keypair": {"name": "k1", "public_key": PUBLIC_KEY}}
    assert client.post("/compute/v2.1/os-keypairs", body, format="json").status_code == 201
    dup = client.post("/compute/v2.1/os-keypairs", body, format="json")
    assert dup.status_code == 409
    assert dup.json() == {"conflictingRequest": {"code": 409, "message": "Key pair 'k1' already exists."}}
    bad = client.post("/compute/v2.1/os-keypairs", {"keypair": {"name": "k2", "public_key": "ssh-rsa nonsense"}},
                      format="json")
    assert bad.status_code == 400
    assert bad.json()["badRequest"]["message"] == "Keypair data is invalid: failed to generate fingerprint"
    bad_name = client.post("/compute/v2.1/os-keypairs", {"keypair": {"name": "a@b", "public_key": PUBLIC_KEY}},
                           format="json")
    assert bad_name.status_code == 400


def test_generation_below_292_and_refused_from_292(personas: Personas) -> None:
    generated = personas.client("member", "2.91").post("/compute/v2.1/os-keypairs", {"keypair": {"name": "gen"}},
                                                       format="json")
    assert generated.status_code == 201
    body = generated.json()["keypair"]
    assert body["private_key"].startswith("-----BEGIN RSA PRIVATE KEY-----")
    assert body["public_key"].startswith("ssh-rsa ")
    refused = personas.client("member", "2.92").post("/compute/v2.1/os-keypairs", {"keypair": {"name": "gen2"}},
                                                     format="json")
    assert refused.status_code == 400
    assert "Keypair generation is not supported" in refused.json()["badRequest"]["message"]
    # 2.92 also widens the allowed name characters
    assert personas.client("member", "2.92").post(
        "/compute/v2.1/os-keypairs", {"keypair": {"name": "a@b.c", "public_key": PUBLIC_KEY}},
        format="json").status_code == 201


def test_type_field_only_from_22(personas: Personas) -> None:
    body = {"keypair": {"name": "k", "public_key": PUBLIC_KEY, "type": "ssh"}}
    assert personas.client("member", "2.1").post("/compute/v2.1/os-keypairs", body, format="json").status_code == 400
    x509 = personas.client("member", "2.2").post(
        "/compute/v2.1/os-keypairs", {"keypair": {"name": "x", "public_key": "junk", "type": "x509"}}, format="json")
    assert x509.status_code == 400 and "X509" in x509.json()["badRequest"]["message"]


def test_admin_acts_for_another_user_from_210(personas: Personas) -> None:
    member_id = personas.member[0].id
    admin = personas.client("admin", "2.10")
    created = admin.post("/compute/v2.1/os-keypairs",
                         {"keypair": {"name": "for-demo", "public_key": PUBLIC_KEY, "user_id": member_id}},
                         format="json")
    assert created.status_code == 201 and created.json()["keypair"]["user_id"] == member_id
    assert KeyPair.objects.get(name="for-demo").user_id == member_id
    assert admin.get(f"/compute/v2.1/os-keypairs?user_id={member_id}").json()["keypairs"][0]["keypair"]["name"] == (
        "for-demo")
    # a member cannot act for someone else
    denied = personas.client("other", "2.10").get(f"/compute/v2.1/os-keypairs?user_id={member_id}")
    assert denied.status_code == 403
    assert admin.delete(f"/compute/v2.1/os-keypairs/for-demo?user_id={member_id}").status_code == 204


def test_paging_from_235(personas: Personas) -> None:
    client = personas.client("member", "2.35")
    for name in ("a", "b", "c"):
        client.post("/compute/v2.1/os-keypairs", {"keypair": {"name": name, "public_key": PUBLIC_KEY}},
                    format="json")
    page = client.get("/compute/v2.1/os-keypairs?limit=2").json()
    assert [k["keypair"]["name"] for k in page["keypairs"]] == ["a", "b"]
    assert "marker=b" in page["keypairs_links"][0]["href"]
    rest = client.get("/compute/v2.1/os-keypairs?limit=2&marker=b").json()
    assert [k["keypair"]["name"] for k in rest["keypairs"]] == ["c"]
    assert client.get("/compute/v2.1/os-keypairs?marker=zz").status_code == 400


@override_settings(QUOTA_INSTANCES=7, QUOTA_CORES=9, QUOTA_RAM=1000)
def test_limits_absolute_per_microversion(personas: Personas, cells: object) -> None:
    absolute = personas.client("member").get("/compute/v2.1/limits").json()["limits"]["absolute"]
    assert absolute["maxTotalInstances"] == 7 and absolute["maxTotalCores"] == 9
    assert absolute["maxTotalRAMSize"] == 1000
    assert absolute["totalInstancesUsed"] == 0 and absolute["totalCoresUsed"] == 0
    assert "maxSecurityGroups" in absolute and "maxPersonality" in absolute
    at_236 = personas.client("member", "2.36").get("/compute/v2.1/limits").json()["limits"]["absolute"]
    assert "maxSecurityGroups" not in at_236 and "maxPersonality" in at_236
    at_257 = personas.client("member", "2.57").get("/compute/v2.1/limits").json()["limits"]
    assert "maxPersonality" not in at_257["absolute"] and at_257["rate"] == []


def test_limits_count_usage_of_the_asked_project(personas: Personas, cells: dict) -> None:
    from cells.context import target_cell
    from servers.models import Instance

    # given demo has one 2-vCPU server in cell1
    with target_cell(cells["cell1"]):
        Instance.objects.create(project_id=personas.member[1].id, user_id="u", vcpus=2, memory_mb=256)
    absolute = personas.client("member").get("/compute/v2.1/limits").json()["limits"]["absolute"]
    assert (absolute["totalInstancesUsed"], absolute["totalCoresUsed"], absolute["totalRAMUsed"]) == (1, 2, 256)
    # an admin may read it with tenant_id; another member silently gets its own
    demo = personas.member[1].id
    admin_view = personas.client("admin").get(f"/compute/v2.1/limits?tenant_id={demo}").json()
    assert admin_view["limits"]["absolute"]["totalInstancesUsed"] == 1
    other_view = personas.client("other").get(f"/compute/v2.1/limits?tenant_id={demo}").json()
    assert other_view["limits"]["absolute"]["totalInstancesUsed"] == 0


def test_x509_generation_and_import(personas: Personas) -> None:
    client = personas.client("member", "2.2")
    generated = client.post("/compute/v2.1/os-keypairs", {"keypair": {"name": "cert", "type": "x509"}},
                            format="json")
    assert generated.status_code == 201
    body = generated.json()["keypair"]
    assert body["type"] == "x509" and body["public_key"].startswith("-----BEGIN CERTIFICATE-----")
    assert len(body["fingerprint"].split(":")) == 20  # SHA-1
    imported = client.post("/compute/v2.1/os-keypairs",
                           {"keypair": {"name": "cert2", "type": "x509", "public_key": body["public_key"]}},
                           format="json")
    assert imported.status_code == 201 and imported.json()["keypair"]["fingerprint"] == body["fingerprint"]

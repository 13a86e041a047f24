"""The API frame: version documents, token auth, microversion negotiation, fault bodies."""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.apihelpers import auth_client, make_identity

pytestmark = pytest.mark.django_db


def test_compute_versions_document_lists_v20_then_v21() -> None:
    # given no token, when the root is read
    response = APIClient().get("/compute/")
    # then both versions are listed, v2.1 current with the range
    assert response.status_code == 200
    versions = response.json()["versions"]
    assert [v["id"] for v in versions] == ["v2.0", "v2.1"]
    assert versions[1]["version"] == "2.105" and versions[1]["min_version"] == "2.1"
    assert versions[1]["status"] == "CURRENT"


@pytest.mark.parametrize("version_id", ["v2.0", "v2.1"])
def test_every_listed_version_document_is_followable(version_id: str) -> None:
    # each version's self link leads to its own document, whose self link is the same (Tempest's
    # test_get_version_details walks them)
    listed = {v["id"]: v for v in APIClient().get("/compute/").json()["versions"]}[version_id]
    self_link = [link for link in listed["links"] if link["rel"] == "self"]
    path = self_link[0]["href"].split("/compute/", 1)[1]
    document = APIClient().get(f"/compute/{path}").json()["version"]
    assert [link for link in document["links"] if link["rel"] == "self"] == self_link
    assert document["id"] == version_id and document["media-types"][0]["base"] == "application/json"


def test_v21_document_and_headers_at_minimum() -> None:
    response = APIClient().get("/compute/v2.1/")
    assert response.status_code == 200
    assert response.json()["version"]["id"] == "v2.1"
    assert response["OpenStack-API-Version"] == "compute 2.1"
    assert response["X-OpenStack-Nova-API-Version"] == "2.1"
    assert "OpenStack-API-Version" in response["Vary"]
    assert response["x-openstack-request-id"].startswith("req-")


def test_no_token_is_401_with_fault_body() -> None:
    response = APIClient().get("/compute/v2.1/no-such-thing")
    assert response.status_code == 401
    assert response.json() == {
        "unauthorized": {"code": 401, "message": "The request you have made requires authentication."}
    }
    assert response["OpenStack-API-Version"] == "compute 2.1"


def test_bad_token_is_401() -> None:
    client = APIClient()
    client.credentials(HTTP_X_AUTH_TOKEN="nope")
    assert client.get("/compute/v2.1/no-such-thing").status_code == 401


def test_unknown_path_is_nova_404() -> None:
    user, project = make_identity("alice")
    response = auth_client(user, project).get("/compute/v2.1/os-nothing-here")
    assert response.status_code == 404
    assert response.json()["itemNotFound"]["code"] == 404


@pytest.mark.parametrize(
    ("header", "value", "echo"),
    [
        ("HTTP_OPENSTACK_API_VERSION", "compute 2.53", "2.53"),
        ("HTTP_OPENSTACK_API_VERSION", "compute latest", "2.105"),
        ("HTTP_OPENSTACK_API_VERSION", "volume 3.5, compute 2.60", "2.60"),
        ("HTTP_X_OPENSTACK_NOVA_API_VERSION", "2.10", "2.10"),
        ("HTTP_OPENSTACK_API_VERSION", "volume 3.5", "2.1"),
    ],
)
def test_version_negotiation(header: str, value: str, echo: str) -> None:
    response = APIClient().get("/compute/v2.1/", **{header: value})
    assert response.status_code == 200
    assert response["OpenStack-API-Version"] == f"compute {echo}"
    assert response["X-OpenStack-Nova-API-Version"] == echo


def test_version_out_of_range_is_406() -> None:
    user, project = make_identity("alice")
    client = auth_client(user, project, version="2.200")
    response = client.get("/compute/v2.1/os-nothing")
    assert response.status_code == 406
    body = response.json()["computeFault"]
    assert body["message"] == "Version 2.200 is not supported by the API. Minimum is 2.1 and maximum is 2.105."


@pytest.mark.parametrize("bad", ["2", "2.a", "two", "2.01.1", ""])
def test_malformed_version_is_400(bad: str) -> None:
    user, project = make_identity("alice")
    client = auth_client(user, project, version=bad)
    response = client.get("/compute/v2.1/os-nothing")
    if bad == "":
        # "compute " with no version: nothing asked, the minimum applies
        assert response.status_code == 404
        return
    assert response.status_code == 400
    assert "is of invalid format" in response.json()["badRequest"]["message"]


def test_revoked_token_is_401() -> None:
    from identity.services.tokens import context_for_token, token_revoke

    user, project = make_identity("alice")
    client = auth_client(user, project)
    token_revoke(actor=context_for_token(client.token)[1], token_id=client.token)
    assert client.get("/compute/v2.1/os-nothing").status_code == 401

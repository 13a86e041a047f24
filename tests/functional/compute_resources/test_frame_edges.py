"""Microversion negotiation edge cases and Nova fault bodies on the compute resources."""
from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from servers.models import Flavor

from .conftest import Personas

pytestmark = pytest.mark.django_db


@pytest.fixture
def client(personas: Personas, flavors: list[Flavor]) -> APIClient:
    return personas.client("member")


@pytest.mark.parametrize(
    ("value", "code", "message"),
    [
        ("compute 2.0", 406, "Version 2.0 is not supported by the API. Minimum is 2.1 and maximum is 2.105."),
        ("compute 2.106", 406, "Version 2.106 is not supported by the API. Minimum is 2.1 and maximum is 2.105."),
        ("compute 3.0", 406, "Version 3.0 is not supported by the API. Minimum is 2.1 and maximum is 2.105."),
        ("compute 2.01", 400, "API Version String 2.01 is of invalid format. Must be of format MajorNum.MinorNum."),
        ("compute two", 400, "API Version String two is of invalid format. Must be of format MajorNum.MinorNum."),
    ],
)
def test_bad_versions(client: APIClient, value: str, code: int, message: str) -> None:
    response = client.get("/compute/v2.1/flavors", HTTP_OPENSTACK_API_VERSION=value)
    assert response.status_code == code
    name = "badRequest" if code == 400 else "computeFault"
    assert response.json() == {name: {"code": code, "message": message}}


@pytest.mark.parametrize(
    ("headers", "echo"),
    [
        ({"HTTP_OPENSTACK_API_VERSION": "compute LATEST"}, "2.105"),
        ({"HTTP_OPENSTACK_API_VERSION": "compute 2.55", "HTTP_X_OPENSTACK_NOVA_API_VERSION": "2.10"}, "2.55"),
        ({"HTTP_X_OPENSTACK_NOVA_API_VERSION": "latest"}, "2.105"),
        ({}, "2.1"),
    ],
)
def test_negotiated_version_is_echoed_and_shapes_the_body(client: APIClient, headers: dict[str, str],
                                                           echo: str) -> None:
    response = client.get("/compute/v2.1/flavors/1", **headers)
    assert response.status_code == 200
    assert response["OpenStack-API-Version"] == f"compute {echo}"
    assert response["X-OpenStack-Nova-API-Version"] == echo
    assert "X-OpenStack-Nova-API-Version" in response["Vary"]
    assert ("description" in response.json()["flavor"]) is (echo != "2.1")


def test_errors_carry_version_and_request_id(client: APIClient) -> None:
    response = client.get("/compute/v2.1/flavors/nope", HTTP_OPENSTACK_API_VERSION="compute 2.60")
    assert response.status_code == 404
    assert response.json() == {"itemNotFound": {"code": 404, "message": "Flavor nope could not be found."}}
    assert response["OpenStack-API-Version"] == "compute 2.60"
    assert response["x-openstack-request-id"].startswith("req-")
    assert response["x-compute-request-id"] == response["x-openstack-request-id"]


def test_method_not_allowed_is_405_fault(client: APIClient) -> None:
    response = client.delete("/compute/v2.1/flavors")
    assert response.status_code == 405
    assert response.json()["badMethod"]["code"] == 405


def test_malformed_json_is_400(personas: Personas, flavors: list[Flavor]) -> None:
    response = personas.client("admin").post("/compute/v2.1/flavors", "{not json", content_type="application/json")
    assert response.status_code == 400
    assert response.json() == {"badRequest": {"code": 400, "message": "Malformed request body"}}


def test_missing_body_is_400(personas: Personas, flavors: list[Flavor]) -> None:
    response = personas.client("admin").post("/compute/v2.1/flavors")
    assert response.status_code == 400 and "badRequest" in response.json()


def test_strict_schema_names_the_field(personas: Personas, flavors: list[Flavor]) -> None:
    response = personas.client("admin").post(
        "/compute/v2.1/flavors", {"flavor": {"name": "x", "ram": "lots", "vcpus": 1, "disk": 0}}, format="json")
    assert response.status_code == 400
    assert response.json()["badRequest"]["message"].startswith("Invalid input for field/attribute flavor/ram.")
    extra = personas.client("admin").post(
        "/compute/v2.1/flavors", {"flavor": {"name": "x", "ram": 1, "vcpus": 1, "disk": 0, "color": "red"}},
        format="json")
    assert extra.status_code == 400 and "'color' was unexpected" in extra.json()["badRequest"]["message"]


def test_empty_accept_header_still_answers_json(personas: Personas, flavors: list[Flavor]) -> None:
    # openstacksdk sends "Accept: " on flavor actions
    response = personas.client("admin").get("/compute/v2.1/flavors/1", HTTP_ACCEPT="")
    assert response.status_code == 200 and response.json()["flavor"]["id"] == "1"
    odd = personas.client("admin").get("/compute/v2.1/flavors/1", HTTP_ACCEPT="application/xml")
    assert odd.status_code == 200 and odd["Content-Type"].startswith("application/json")


@pytest.mark.parametrize("path", ["/compute/v2.1/os-keypairs?foo=1", "/compute/v2.1/os-keypairs/k?limit=1"])
def test_keypair_query_parameters_strict_from_275(personas: Personas, path: str) -> None:
    response = personas.client("member", "2.75").get(path)
    assert response.status_code == 400
    assert "was unexpected" in response.json()["badRequest"]["message"]
    assert personas.client("member", "2.74").get(path).status_code in (200, 404)

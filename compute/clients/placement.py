"""Placement as nova-compute's report client reaches it: HTTP as the cloud's service user, with
the microversions nova-compute sends.

- providers: ``GET /resource_providers/{uuid}`` (1.14), ``POST /resource_providers`` (1.20, the
  answer is the provider), ``PUT /resource_providers/{uuid}`` (rename);
- inventories: ``GET``/``PUT /resource_providers/{uuid}/inventories`` (1.26) with the provider
  generation; a 409 generation conflict re-reads the generation and retries;
- traits: ``GET``/``PUT /resource_providers/{uuid}/traits`` (1.6), same retry;
- allocations of a consumer: ``GET``/``PUT``/``DELETE /allocations/{consumer}`` (1.28: consumer
  generations; 1.38 where the consumer type is written);
- moving allocations between consumers in one transaction: ``POST /allocations`` (1.38), retried
  on a consumer generation conflict.

Everything returned is a plain dataclass or dict, never a model row.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import requests

from .session import ServiceCallFailed, expect, service_adapter

log = logging.getLogger(__name__)

SERVICE = "placement"
#: the microversions nova-compute's report client uses for each call
PROVIDER_VERSION = "1.14"  # nested providers: parent/root in the answers
PROVIDER_CREATE_VERSION = "1.20"  # POST answers with the provider
INVENTORY_VERSION = "1.26"  # reserved may equal total
TRAITS_VERSION = "1.6"
CONSUMER_VERSION = "1.28"  # consumer generations
CONSUMER_TYPE_VERSION = "1.38"  # consumer types on writes
#: Placement's error code of a stale provider or consumer generation
CONCURRENT_UPDATE = "placement.concurrent_update"
#: how often a write that lost a generation race is retried (Nova retries a few times too)
RETRIES = 4

#: ``{rp_uuid: {resource_class: amount}}``
AllocationMap = Mapping[str, Mapping[str, int]]


@dataclass(frozen=True)
class Provider:
    uuid: str
    name: str
    generation: int


@dataclass
class ConsumerAllocations:
    """A consumer's allocations as ``GET /allocations/{consumer}`` (1.28) answers them; a consumer
    that holds nothing has no generation."""

    consumer_uuid: str
    allocations: dict[str, dict[str, int]] = field(default_factory=dict)
    project_id: str | None = None
    user_id: str | None = None
    consumer_generation: int | None = None


class GenerationConflict(ServiceCallFailed):
    """A write lost its race for a provider or consumer generation more than ``RETRIES`` times."""


def _conflict_code(resp: requests.Response) -> str:
    try:
        errors = resp.json().get("errors") or [{}]
    except (ValueError, AttributeError):
        return ""
    return str(errors[0].get("code", ""))


def _is_generation_conflict(resp: requests.Response) -> bool:
    return resp.status_code == 409 and _conflict_code(resp) == CONCURRENT_UPDATE


def _ok(resp: requests.Response, *codes: int) -> requests.Response:
    return expect(resp, *codes, service=SERVICE)


def _provider(body: Mapping[str, Any]) -> Provider:
    return Provider(uuid=str(body["uuid"]), name=str(body["name"]), generation=int(body["generation"]))


# --- resource providers ----------------------------------------------------------------------------
def provider_get(*, uuid: str) -> Provider | None:
    """The provider, or None when placement has none with ``uuid``."""
    resp = service_adapter(SERVICE).get(f"/resource_providers/{uuid}", microversion=PROVIDER_VERSION)
    if resp.status_code == 404:
        return None
    return _provider(_ok(resp, 200).json())


def provider_create(*, uuid: str, name: str) -> Provider:
    """Create a root provider (409 duplicate name or uuid: ServiceCallFailed)."""
    resp = service_adapter(SERVICE).post("/resource_providers", json={"uuid": uuid, "name": name},
                                         microversion=PROVIDER_CREATE_VERSION)
    return _provider(_ok(resp, 200).json())


def provider_ensure(*, uuid: str, name: str) -> Provider:
    """The provider with ``uuid``, created or renamed to ``name`` as needed (a compute node's
    provider: uuid = node uuid, name = hypervisor hostname)."""
    found = provider_get(uuid=uuid)
    if found is None:
        return provider_create(uuid=uuid, name=name)
    if found.name == name:
        return found
    resp = service_adapter(SERVICE).put(f"/resource_providers/{uuid}", json={"name": name},
                                        microversion=PROVIDER_VERSION)
    return _provider(_ok(resp, 200).json())


# --- inventories and traits ------------------------------------------------------------------------
def inventories_get(*, uuid: str) -> tuple[int, dict[str, dict[str, Any]]]:
    """(provider generation, ``{resource_class: {total, reserved, ...}}``)."""
    resp = _ok(service_adapter(SERVICE).get(f"/resource_providers/{uuid}/inventories",
                                            microversion=INVENTORY_VERSION), 200)
    body = resp.json()
    return int(body["resource_provider_generation"]), dict(body["inventories"])


def inventories_put(*, uuid: str, inventories: Mapping[str, Mapping[str, Any]], generation: int) -> int:
    """Replace the provider's inventories; returns its new generation. A stale ``generation`` is
    re-read and the write retried (``GenerationConflict`` after ``RETRIES``)."""
    return _put_with_generation(f"/resource_providers/{uuid}/inventories", INVENTORY_VERSION, generation,
                                {"inventories": {rc: dict(v) for rc, v in inventories.items()}})


def traits_get(*, uuid: str) -> tuple[int, list[str]]:
    """(provider generation, sorted trait names)."""
    resp = _ok(service_adapter(SERVICE).get(f"/resource_providers/{uuid}/traits", microversion=TRAITS_VERSION),
               200)
    body = resp.json()
    return int(body["resource_provider_generation"]), sorted(body["traits"])


def traits_put(*, uuid: str, traits: Iterable[str], generation: int) -> int:
    """Replace the provider's traits; returns its new generation (retried like inventories)."""
    return _put_with_generation(f"/resource_providers/{uuid}/traits", TRAITS_VERSION, generation,
                                {"traits": sorted(set(traits))})


def _put_with_generation(path: str, version: str, generation: int, body: dict[str, Any]) -> int:
    adapter = service_adapter(SERVICE)
    for _attempt in range(RETRIES):
        resp = adapter.put(path, json={**body, "resource_provider_generation": generation}, microversion=version)
        if not _is_generation_conflict(resp):
            return int(_ok(resp, 200).json()["resource_provider_generation"])
        generation = int(_ok(adapter.get(path, microversion=version), 200).json()["resource_provider_generation"])
    raise GenerationConflict(service=SERVICE, status=409, method="PUT", url=path,
                             detail=f"provider generation still stale after {RETRIES} attempts")


# --- allocations -------------------------------------------------------------------------------------
def allocations_get(*, consumer_uuid: str) -> ConsumerAllocations:
    """The consumer's allocations (empty for a consumer placement does not know)."""
    resp = _ok(service_adapter(SERVICE).get(f"/allocations/{consumer_uuid}", microversion=CONSUMER_VERSION), 200)
    body = resp.json()
    return ConsumerAllocations(
        consumer_uuid=consumer_uuid,
        allocations={rp: dict(entry["resources"]) for rp, entry in body.get("allocations", {}).items()},
        project_id=body.get("project_id"), user_id=body.get("user_id"),
        consumer_generation=body.get("consumer_generation"),
    )


def allocations_put(*, consumer_uuid: str, allocations: AllocationMap, project_id: str, user_id: str,
                    consumer_generation: int | None, consumer_type: str = "INSTANCE") -> None:
    """Replace the consumer's allocations (``consumer_generation``: the one last read, None for a new
    consumer). A 409 (over capacity, stale consumer generation) is ServiceCallFailed."""
    resp = service_adapter(SERVICE).put(f"/allocations/{consumer_uuid}", microversion=CONSUMER_TYPE_VERSION, json={
        "allocations": {rp: {"resources": dict(res)} for rp, res in allocations.items()},
        "project_id": project_id, "user_id": user_id, "consumer_generation": consumer_generation,
        "consumer_type": consumer_type,
    })
    _ok(resp, 204)


def allocations_delete(*, consumer_uuid: str) -> bool:
    """Drop every allocation of the consumer; False when it held none."""
    resp = service_adapter(SERVICE).delete(f"/allocations/{consumer_uuid}", microversion=CONSUMER_VERSION)
    return _ok(resp, 204, 404).status_code == 204


def allocations_back_to_server(*, instance_uuid: str, migration_uuid: str, project_id: str, user_id: str) -> None:
    """The server gets back the allocations its migration holds (the source host's, taken over at
    the move's start); whatever the server holds now (a destination's claim) is dropped. One
    ``POST /allocations``: the migration's allocations move to the server atomically. A migration
    that holds nothing leaves the server with nothing."""
    adapter = service_adapter(SERVICE)
    for _attempt in range(RETRIES):
        held = allocations_get(consumer_uuid=migration_uuid)
        if not held.allocations:
            allocations_delete(consumer_uuid=instance_uuid)
            return
        server = allocations_get(consumer_uuid=instance_uuid)
        resp = adapter.post("/allocations", microversion=CONSUMER_TYPE_VERSION, json={
            migration_uuid: {"allocations": {}, "project_id": held.project_id or project_id,
                             "user_id": held.user_id or user_id, "consumer_generation": held.consumer_generation,
                             "consumer_type": "MIGRATION"},
            instance_uuid: {"allocations": {rp: {"resources": res} for rp, res in held.allocations.items()},
                            "project_id": project_id, "user_id": user_id,
                            "consumer_generation": server.consumer_generation, "consumer_type": "INSTANCE"},
        })
        if not _is_generation_conflict(resp):
            _ok(resp, 204)
            return
        log.info("allocations of %s or %s changed meanwhile; moving them again", migration_uuid, instance_uuid)
    raise GenerationConflict(service=SERVICE, status=409, method="POST", url="/allocations",
                             detail=f"consumer generations still stale after {RETRIES} attempts")

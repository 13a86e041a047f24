"""The service catalog: every cloudcore endpoint of DESIGN.md section 5, public, RegionOne, and
the services and endpoints operators registered (``catalog_admin``).

The cloud's own services and endpoints are not rows: they are worked out from
``settings.PUBLIC_URL`` (``make run`` sets it from the bind address), with ids derived from the
service type so that clients caching the catalog see no churn. Registered ones are ``Service`` and
``Endpoint`` rows; an endpoint may belong to one of the cloud's own services (an internal URL
for the compute API, say), and then appears under that service's catalog entry. Disabled
services and endpoints stay out of the catalog, as in Keystone.

A token's catalog is read on every issue and validation: the registered rows are remembered by
each process under the change stamp ``CATALOG_STAMP`` (``cloudcore.core.stamps``), bumped by every
write of a Service or an Endpoint, so a request reads them only after a change.
"""
from __future__ import annotations

import re
import uuid
from typing import Any

from django.conf import settings

from cloudcore.core.stamps import Remembered

from ..models import Endpoint, Service

REGION = "RegionOne"
CATALOG_STAMP = "identity.catalog"

#: (type, name, path below PUBLIC_URL)
SERVICES: tuple[tuple[str, str, str], ...] = (
    ("identity", "keystone", "/identity"),
    ("compute", "nova", "/compute/v2.1"),
    ("image", "glance", "/image"),
    ("volumev3", "cinderv3", "/volume/v3"),
    ("block-storage", "cinder", "/volume/v3"),
    ("network", "neutron", "/network"),
    ("placement", "placement", "/placement"),
)

#: the substitutions an endpoint URL may hold, as Keystone's: ``$(project_id)s`` and
#: ``$(tenant_id)s`` (the token's project), ``$(user_id)s`` (its user)
URL_SUBSTITUTIONS = ("project_id", "tenant_id", "user_id")
_SUBSTITUTION = re.compile(r"\$\((\w*)\)s")


def public_base() -> str:
    return str(settings.PUBLIC_URL).rstrip("/")


def _stable_id(*parts: str) -> str:
    return uuid.uuid5(uuid.NAMESPACE_URL, "cloudcore:" + ":".join(parts)).hex


def own_services() -> list[Service]:
    """The cloud's own services (never saved)."""
    return [Service(id=_stable_id("service", service_type), type=service_type, name=name, enabled=True,
                    extra={"description": ""}) for service_type, name, _ in SERVICES]


def own_endpoints() -> list[Endpoint]:
    """The cloud's own endpoints, one public endpoint per own service (never saved)."""
    base = public_base()
    return [Endpoint(id=_stable_id("endpoint", service_type, "public"), service_id=_stable_id("service", service_type),
                     interface="public", url=base + path, region_id=REGION, enabled=True, extra={})
            for service_type, _, path in SERVICES]


def is_own_service(service_id: str) -> bool:
    return any(service.id == service_id for service in own_services())


def is_own_endpoint(endpoint_id: str) -> bool:
    return any(endpoint.id == endpoint_id for endpoint in own_endpoints())


def url_substitutions_unknown(url: str) -> list[str]:
    """The substitutions of ``url`` that are not in ``URL_SUBSTITUTIONS``."""
    return [name for name in _SUBSTITUTION.findall(url) if name not in URL_SUBSTITUTIONS]


def _substituted(url: str, values: dict[str, str]) -> str | None:
    """``url`` with its substitutions made; None when one has no value (an unscoped catalog)."""
    missing = False

    def value(match: re.Match[str]) -> str:
        nonlocal missing
        found = values.get(match.group(1))
        missing = missing or found is None
        return found or ""

    result = _SUBSTITUTION.sub(value, url)
    return None if missing else result


_registered: Remembered[tuple[tuple[Service, ...], tuple[Endpoint, ...]]] = Remembered(CATALOG_STAMP, max_entries=1)


def _registered_read() -> tuple[tuple[Service, ...], tuple[Endpoint, ...]]:
    return (tuple(Service.objects.filter(enabled=True).order_by("created_at", "id")),
            tuple(Endpoint.objects.filter(enabled=True).order_by("created_at", "id")))


def catalog(*, project_id: str | None = None, user_id: str | None = None) -> list[dict[str, Any]]:
    """Keystone v3 catalog entries (``token.catalog`` and ``GET /v3/auth/catalog``) of a token of
    ``user_id`` on ``project_id``: the cloud's own services, then the enabled registered ones,
    each with its enabled endpoints (URL substitutions made; an endpoint whose URL needs a value
    the token has not is left out, as Keystone does)."""
    found = _registered.get("all", _registered_read)
    services, endpoints = found if found is not None else ((), ())
    values = {"project_id": project_id, "tenant_id": project_id, "user_id": user_id}
    by_service: dict[str, list[dict[str, Any]]] = {}
    for endpoint in (*own_endpoints(), *endpoints):
        url = _substituted(endpoint.url, {k: v for k, v in values.items() if v is not None})
        if url is not None:
            by_service.setdefault(endpoint.service_id, []).append({
                "id": endpoint.id, "interface": endpoint.interface, "region": endpoint.region_id,
                "region_id": endpoint.region_id, "url": url,
            })
    return [{"id": service.id, "type": service.type, "name": service.name, "endpoints": by_service.get(service.id, [])}
            for service in (*own_services(), *services)]

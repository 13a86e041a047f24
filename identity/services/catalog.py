"""The service catalog: every cloudcore endpoint of DESIGN.md section 5, public, RegionOne.

URLs are built from ``settings.PUBLIC_URL`` (``make run`` sets it from the bind address); ids are
stable (derived from the service type) so that clients caching the catalog see no churn.
"""
from __future__ import annotations

import uuid
from typing import Any

from django.conf import settings

REGION = "RegionOne"

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


def public_base() -> str:
    return str(settings.PUBLIC_URL).rstrip("/")


def _stable_id(*parts: str) -> str:
    return uuid.uuid5(uuid.NAMESPACE_URL, "cloudcore:" + ":".join(parts)).hex


def catalog() -> list[dict[str, Any]]:
    """Keystone v3 catalog entries (``token.catalog`` and ``GET /v3/auth/catalog``)."""
    base = public_base()
    entries = []
    for service_type, name, path in SERVICES:
        entries.append({
            "id": _stable_id("service", service_type),
            "type": service_type,
            "name": name,
            "endpoints": [{
                "id": _stable_id("endpoint", service_type, "public"),
                "interface": "public",
                "region": REGION,
                "region_id": REGION,
                "url": base + path,
            }],
        })
    return entries

"""Writes of request specs (API database): what the scheduler is asked for a server."""
from __future__ import annotations

from typing import Any

from ..models import RequestSpec


def request_spec_create(*, instance_uuid: str, spec: dict[str, Any]) -> RequestSpec:
    """Record the request spec of a new server (``spec`` as the scheduler reads it)."""
    return RequestSpec.objects.create(instance_uuid=instance_uuid, spec=spec)


def request_specs_delete(instance_uuids: list[str]) -> tuple[int, dict[str, int]]:
    """Delete the request specs of archived servers (``QuerySet.delete``'s counts)."""
    return RequestSpec.objects.filter(instance_uuid__in=instance_uuids).delete()

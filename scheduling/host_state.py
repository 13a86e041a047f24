"""What the scheduler knows about one compute node while it schedules one request, and the
request spec seen through the fields the filters and weighers read."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from .placement.services import capacity


@dataclass
class HostState:
    """One compute node: where it is (host, node, cell), its service, its hypervisor, and its
    placement capacity/usage (``resources``: ``{rc: {"capacity": c, "used": u}}``)."""

    host: str
    nodename: str
    uuid: str
    cell_uuid: str
    service: Any = None
    hypervisor_type: str = ""
    hypervisor_version: int = 0
    cpu_arch: str | None = None
    resources: dict[str, dict[str, int]] = field(default_factory=dict)
    traits: list[str] = field(default_factory=list)
    aggregate_metadata: dict[str, set[str]] = field(default_factory=dict)
    availability_zone: str = ""
    allocation_request: dict[str, Any] | None = None
    weight: float = 0.0
    cell_name: str | None = None
    #: True when the scheduler read that the service is enabled and up for this request (its
    #: ``service`` view then carries no heartbeat); None: ``ComputeFilter`` looks at ``service``
    service_up: bool | None = None
    #: the compute node's row id in its cell
    compute_id: int | None = None

    def free(self, rc: str) -> int:
        res = self.resources.get(rc)
        return res["capacity"] - res["used"] if res else 0

    def capacity(self, rc: str) -> int:
        """What this node has of ``rc`` in all for servers (placement's capacity: reserved left out)."""
        res = self.resources.get(rc)
        return res["capacity"] if res else 0

    @property
    def free_ram_mb(self) -> int:
        return self.free("MEMORY_MB")

    @property
    def free_disk_mb(self) -> int:
        return self.free("DISK_GB") * 1024

    @property
    def vcpus_free(self) -> int:
        return self.free("VCPU")

    def fits(self, wanted: dict[str, int]) -> bool:
        """Can this node still take ``wanted`` given what earlier instances of the request took?
        (Placement checked constraints; only the remaining amount changes here.)"""
        resources = self.resources
        for rc, n in wanted.items():
            res = resources.get(rc)
            if res is None or res["capacity"] - res["used"] < n:
                return False
        return True

    def consume(self, wanted: dict[str, int]) -> None:
        """Count ``wanted`` as used on this host for the rest of the request. ``resources`` may
        be shared with placement's copy (``ProviderCache``), so it is copied, never changed."""
        self.resources = {rc: {**res, "used": res["used"] + wanted[rc]} if rc in wanted else res
                          for rc, res in self.resources.items()}

    def __repr__(self) -> str:
        return f"({self.host}, {self.nodename}) cell={self.cell_uuid}"


def summary_resources(summary: dict[str, Any]) -> dict[str, dict[str, int]]:
    return {rc: {"capacity": int(v["capacity"]), "used": int(v["used"])}
            for rc, v in summary.get("resources", {}).items()}


def cpu_arch(cpu_info: str | None) -> str | None:
    try:
        info = json.loads(cpu_info or "{}")
    except ValueError:
        return None
    return info.get("arch") if isinstance(info, dict) else None


class RequestView:
    """Read-only helpers over the RequestSpec JSON (``servers/services/create.py`` writes it)."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        self.flavor: dict[str, Any] = spec.get("flavor") or {}
        self.extra_specs: dict[str, str] = {str(k): str(v) for k, v in (self.flavor.get("extra_specs") or {}).items()}
        image = spec.get("image") or {}
        props = dict(image.get("properties") or {})
        for key, value in image.items():
            if key not in ("properties",) and key not in props:
                props[key] = value
        self.image_props: dict[str, Any] = props
        self.hints: dict[str, Any] = spec.get("scheduler_hints") or {}
        dest = spec.get("requested_destination") or {}
        self.destination: dict[str, Any] = dest if isinstance(dest, dict) else {}

    # -- where --------------------------------------------------------------------------------
    @property
    def availability_zone(self) -> str | None:
        zone = self.spec.get("availability_zone")
        return str(zone).split(":", 1)[0] or None if zone else None

    @property
    def destination_host(self) -> str | None:
        return self.destination.get("host") or None

    @property
    def destination_node(self) -> str | None:
        return self.destination.get("node") or None

    @property
    def destination_cell(self) -> str | None:
        cell = self.destination.get("cell") or self.destination.get("cell_uuid")
        if isinstance(cell, dict):
            cell = cell.get("uuid")
        return str(cell) if cell else None

    @property
    def source_cell(self) -> str | None:
        cell = self.spec.get("instance_cell_uuid") or self.spec.get("source_cell_uuid")
        return str(cell) if cell else None

    @property
    def allow_cross_cell_move(self) -> bool:
        return bool(self.spec.get("allow_cross_cell_move", self.destination.get("allow_cross_cell_move", False)))

    @property
    def force_hosts(self) -> list[str]:
        return [h for h in self.spec.get("force_hosts") or [] if h]

    @property
    def force_nodes(self) -> list[str]:
        return [n for n in self.spec.get("force_nodes") or [] if n]

    @property
    def ignore_hosts(self) -> list[str]:
        return [h for h in self.spec.get("ignore_hosts") or [] if h]

    @property
    def is_rebuild(self) -> bool:
        """Nova's rebuild re-validation: filters on the current host only, no placement claim."""
        return self.hints.get("_nova_check_type") in (["rebuild"], "rebuild") or bool(self.spec.get("is_rebuild"))

    # -- what ---------------------------------------------------------------------------------
    def resources(self) -> dict[str, int]:
        """Placement resources of one instance: VCPU, MEMORY_MB and DISK_GB (root, unless
        volume-backed, + ephemeral + swap rounded up to GiB), overridden by ``resources:RC=N``."""
        f = self.flavor
        swap_gb = -(-int(f.get("swap") or 0) // 1024)
        root = 0 if self.spec.get("is_bfv") else int(f.get("root_gb") or 0)
        wanted = {
            "VCPU": int(f.get("vcpus") or 0),
            "MEMORY_MB": int(f.get("memory_mb") or 0),
            "DISK_GB": root + int(f.get("ephemeral_gb") or 0) + swap_gb,
        }
        for key, value in self.extra_specs.items():
            if key.startswith("resources:"):
                try:
                    wanted[key.split(":", 1)[1]] = int(value)
                except ValueError:
                    continue
        return {rc: n for rc, n in wanted.items() if n > 0}

    def traits(self) -> tuple[set[str], set[str]]:
        """(required, forbidden) from flavor extra specs ``trait:X=required|forbidden`` and image
        properties ``trait:X=required`` / ``traits_required``."""
        required: set[str] = set()
        forbidden: set[str] = set()
        for source in (self.extra_specs, self.image_props):
            for key, value in source.items():
                if key.startswith("trait:"):
                    if str(value) == "required":
                        required.add(key.split(":", 1)[1])
                    elif str(value) == "forbidden" and source is self.extra_specs:
                        forbidden.add(key.split(":", 1)[1])
        required.update(self.image_props.get("traits_required") or [])
        return required, forbidden

    def destination_aggregates(self) -> list[list[str]]:
        """``requested_destination.aggregates`` (each entry "uuid1,uuid2" = any of)."""
        return [str(item).split(",") for item in self.destination.get("aggregates") or [] if item]


def max_placement_results() -> int:
    return int(getattr(settings, "MAX_PLACEMENT_RESULTS", 1000))


__all__ = ["HostState", "RequestView", "capacity", "cpu_arch", "summary_resources"]

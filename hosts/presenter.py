"""Bodies of ``os-services`` and ``os-hypervisors`` per microversion (STYLE rule 15), as tables.

Ids are integers below 2.53 and uuids from 2.53 (the nested ``service`` of a hypervisor too);
2.11 adds a service's ``forced_down``; 2.88 drops the hypervisor statistics and adds ``uptime``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from cloudcore.core.api.versioned import Field, Since
from cloudcore.core.api.versioned import timestamp as _ts

from .services.services_admin import CellNode, CellService

UUID_IDS = (2, 53)
#: 2.11 the ``force-down`` legacy action; 2.53 services updated by uuid (``PUT /os-services/{uuid}``),
#: hypervisors found by query parameters (``hypervisor_hostname_pattern``, ``with_servers``)
#: instead of the ``/search`` and ``/servers`` routes.
HOSTS_FEATURES = Since({"force_down": (2, 11), "by_uuid": UUID_IDS})


@dataclass(frozen=True)
class ShownService:
    cs: CellService
    zone: str


SERVICE_FIELDS: tuple[Field[ShownService], ...] = (
    Field("id", lambda v: v.cs.service.id, until=(2, 52)),
    Field("id", lambda v: v.cs.service.uuid, since=UUID_IDS),
    Field("binary", lambda v: v.cs.service.binary),
    Field("host", lambda v: v.cs.service.host),
    Field("zone", lambda v: v.zone),
    Field("status", lambda v: "disabled" if v.cs.service.disabled else "enabled"),
    Field("state", lambda v: "up" if v.cs.up else "down"),
    Field("updated_at", lambda v: _ts(v.cs.service.last_seen_up or v.cs.service.updated_at)),
    Field("disabled_reason", lambda v: v.cs.service.disabled_reason),
    Field("forced_down", lambda v: v.cs.service.forced_down, since=(2, 11)),
)


@dataclass(frozen=True)
class ShownNode:
    cn: CellNode
    up: bool
    detail: bool
    servers: list[dict[str, Any]] | None = None


def _service(v: ShownNode, ident: str) -> dict[str, Any]:
    s = v.cn.service
    return {"id": getattr(s, ident) if s else None, "host": v.cn.node.host,
            "disabled_reason": s.disabled_reason if s else None}


def _detail(v: ShownNode) -> bool:
    return v.detail


def _cpu_info_object(raw: str | None) -> dict[str, Any]:
    try:
        value = json.loads(raw or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _stat(name: str) -> Field[ShownNode]:
    return Field(name, lambda v: getattr(v.cn.node, name), until=(2, 87), when=_detail)


NODE_FIELDS: tuple[Field[ShownNode], ...] = (
    Field("id", lambda v: v.cn.node.id, until=(2, 52)),
    Field("id", lambda v: v.cn.node.uuid, since=UUID_IDS),
    Field("hypervisor_hostname", lambda v: v.cn.node.hypervisor_hostname),
    Field("state", lambda v: "up" if v.up else "down"),
    Field("status", lambda v: "disabled" if (v.cn.service and v.cn.service.disabled) else "enabled"),
    Field("host_ip", lambda v: v.cn.node.host_ip, when=_detail),
    Field("hypervisor_type", lambda v: v.cn.node.hypervisor_type, when=_detail),
    Field("hypervisor_version", lambda v: v.cn.node.hypervisor_version, when=_detail),
    Field("service", lambda v: _service(v, "id"), until=(2, 52), when=_detail),
    Field("service", lambda v: _service(v, "uuid"), since=UUID_IDS, when=_detail),
    *(_stat(name) for name in ("vcpus", "memory_mb", "local_gb", "vcpus_used", "memory_mb_used", "local_gb_used",
                               "free_ram_mb", "free_disk_gb", "current_workload", "running_vms",
                               "disk_available_least")),
    # a JSON string before 2.28, the object it holds from 2.28
    Field("cpu_info", lambda v: v.cn.node.cpu_info, until=(2, 27), when=_detail),
    Field("cpu_info", lambda v: _cpu_info_object(v.cn.node.cpu_info), since=(2, 28), until=(2, 87), when=_detail),
    Field("uptime", lambda v: v.cn.node.host_uptime if v.up else None, since=(2, 88), when=_detail),
    Field("servers", lambda v: v.servers, when=lambda v: v.servers is not None),
)

"""``os-services`` and ``os-hypervisors`` (admin), across every cell, per microversion:
integer ids below 2.53, uuids from 2.53 (with ``PUT /os-services/{uuid}``), the legacy
``PUT /os-services/{enable|disable|disable-log-reason|force-down}`` below 2.53, and from 2.88 the
hypervisor body without the old statistics."""
from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.validation import validate
from cloudcore.core.api.views import ComputeAPIView
from cloudcore.core.exceptions import Invalid, NotFound, NotImplementedYet
from cloudcore.core.policy import authorize

from ..services import services_admin as svc


def _ts(value: Any) -> str | None:
    return value.strftime("%Y-%m-%dT%H:%M:%S.%f") if value else None


def _zone(cs: svc.CellService) -> str:
    if cs.service.binary != "nova-compute":
        return "internal"
    from scheduling.services.aggregates import host_availability_zone

    return host_availability_zone(cs.service.host)


def present_service(cs: svc.CellService, version: tuple[int, int]) -> dict[str, Any]:
    s = cs.service
    body: dict[str, Any] = {
        "id": s.uuid if version >= (2, 53) else s.id, "binary": s.binary, "host": s.host, "zone": _zone(cs),
        "status": "disabled" if s.disabled else "enabled", "state": "up" if cs.up else "down",
        "updated_at": _ts(s.last_seen_up or s.updated_at), "disabled_reason": s.disabled_reason,
    }
    if version >= (2, 11):
        body["forced_down"] = s.forced_down
    return body


class ServicesView(ComputeAPIView):
    def get(self, request: Request) -> Response:
        authorize(self.ctx, "os_compute_api:os-services:list")
        found = svc.service_list(host=request.query_params.get("host"), binary=request.query_params.get("binary"))
        return Response({"services": [present_service(cs, self.version) for cs in found]})


UPDATE_253 = {"type": "object", "properties": {
    "status": {"type": "string", "enum": ["enabled", "disabled", "ENABLED", "DISABLED"]},
    "disabled_reason": {"type": "string", "minLength": 1, "maxLength": 255},
    "forced_down": {"type": "boolean"}}, "additionalProperties": False, "minProperties": 1}
LEGACY = {"type": "object", "properties": {"host": {"type": "string", "minLength": 1, "maxLength": 255},
                                           "binary": {"type": "string", "minLength": 1, "maxLength": 255},
                                           "disabled_reason": {"type": "string", "minLength": 1, "maxLength": 255},
                                           "forced_down": {"type": "boolean"}},
          "required": ["host", "binary"], "additionalProperties": False}


class ServiceView(ComputeAPIView):
    def put(self, request: Request, service_id: str) -> Response:
        body = self.body()
        if self.version < (2, 53):
            return self._legacy(service_id, body)
        validate(body, UPDATE_253)
        status = body.get("status")
        cs = svc.service_update(actor=self.ctx, service_id=service_id, status=status.lower() if status else None,
                                disabled_reason=body.get("disabled_reason"), forced_down=body.get("forced_down"))
        return Response({"service": present_service(cs, self.version)})

    def _legacy(self, action: str, body: Any) -> Response:
        if action not in ("enable", "disable", "disable-log-reason", "force-down"):
            raise NotFound(f"Unknown action {action}")
        if action == "force-down" and self.version < (2, 11):
            raise NotFound("Unknown action force-down")
        validate(body, LEGACY)
        where: dict[str, Any] = {"actor": self.ctx, "host": body["host"], "binary": body["binary"]}
        out: dict[str, Any] = {"host": body["host"], "binary": body["binary"]}
        if action == "force-down":
            if "forced_down" not in body:
                raise Invalid("Missing forced_down field")
            svc.service_update(**where, forced_down=body["forced_down"])
            out["forced_down"] = body["forced_down"]
        elif action == "disable-log-reason":
            if not body.get("disabled_reason"):
                raise Invalid("Missing disabled reason field")
            svc.service_update(**where, status="disabled", disabled_reason=body["disabled_reason"])
            out.update(status="disabled", disabled_reason=body["disabled_reason"])
        else:
            svc.service_update(**where, status="enabled" if action == "enable" else "disabled")
            out["status"] = "enabled" if action == "enable" else "disabled"
        return Response({"service": out})

    def delete(self, request: Request, service_id: str) -> Response:
        svc.service_delete(actor=self.ctx, service_id=service_id)
        return Response(status=204)


def present_node(cn: svc.CellNode, version: tuple[int, int], *, detail: bool,
                 servers: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    n, s = cn.node, cn.service
    up = bool(s and svc.service_is_up(s))
    body: dict[str, Any] = {
        "id": n.uuid if version >= (2, 53) else n.id, "hypervisor_hostname": n.hypervisor_hostname,
        "state": "up" if up else "down", "status": "disabled" if (s and s.disabled) else "enabled",
    }
    if detail:
        body.update({
            "host_ip": n.host_ip, "hypervisor_type": n.hypervisor_type, "hypervisor_version": n.hypervisor_version,
            "service": {"id": (s.uuid if version >= (2, 53) else s.id) if s else None, "host": n.host,
                        "disabled_reason": s.disabled_reason if s else None},
        })
        if version < (2, 88):
            body.update({
                "vcpus": n.vcpus, "memory_mb": n.memory_mb, "local_gb": n.local_gb, "vcpus_used": n.vcpus_used,
                "memory_mb_used": n.memory_mb_used, "local_gb_used": n.local_gb_used, "free_ram_mb": n.free_ram_mb,
                "free_disk_gb": n.free_disk_gb, "current_workload": n.current_workload, "running_vms": n.running_vms,
                "disk_available_least": n.disk_available_least, "cpu_info": n.cpu_info,
            })
        else:
            body["uptime"] = n.host_uptime if up else None
    if servers is not None:
        body["servers"] = servers
    return body


def _with_servers(request: Request, version: tuple[int, int]) -> bool:
    value = request.query_params.get("with_servers", "false").lower()
    if value not in ("true", "false", "1", "0", "yes", "no"):
        raise Invalid("Invalid input for query parameters with_servers.")
    return version >= (2, 53) and value in ("true", "1", "yes")


class HypervisorsView(ComputeAPIView):
    detail = False

    def get(self, request: Request) -> Response:
        authorize(self.ctx, "os_compute_api:os-hypervisors:list-detail" if self.detail
                  else "os_compute_api:os-hypervisors:list")
        pattern = request.query_params.get("hypervisor_hostname_pattern") if self.version >= (2, 53) else None
        nodes = svc.node_list(hostname_pattern=pattern)
        if pattern and not nodes:
            raise NotFound(f"No hypervisor matching '{pattern}' could be found.")
        with_servers = _with_servers(request, self.version)
        return Response({"hypervisors": [
            present_node(cn, self.version, detail=self.detail, servers=svc.node_servers(cn) if with_servers else None)
            for cn in nodes]})


class HypervisorsDetailView(HypervisorsView):
    detail = True


class HypervisorView(ComputeAPIView):
    def get(self, request: Request, hypervisor_id: str) -> Response:
        authorize(self.ctx, "os_compute_api:os-hypervisors:show")
        cn = svc.node_get(hypervisor_id)
        servers = svc.node_servers(cn) if _with_servers(request, self.version) else None
        return Response({"hypervisor": present_node(cn, self.version, detail=True, servers=servers)})


#: the ComputeNode counters ``os-hypervisors/statistics`` sums (Nova's body, up to 2.87)
STATISTICS_FIELDS = ("current_workload", "disk_available_least", "free_disk_gb", "free_ram_mb", "local_gb",
                     "local_gb_used", "memory_mb", "memory_mb_used", "running_vms", "vcpus", "vcpus_used")


class HypervisorStatisticsView(ComputeAPIView):
    """``GET /os-hypervisors/statistics`` (up to 2.87): the sums over the compute nodes whose
    service is enabled, in every cell."""

    def get(self, request: Request) -> Response:
        if self.version >= (2, 88):
            raise NotFound("The resource could not be found.")
        authorize(self.ctx, "os_compute_api:os-hypervisors:statistics")
        nodes = [cn.node for cn in svc.node_list() if cn.service is not None and not cn.service.disabled]
        stats = {name: sum(getattr(n, name) or 0 for n in nodes) for name in STATISTICS_FIELDS}
        return Response({"hypervisor_statistics": {"count": len(nodes), **stats}})


class HypervisorUptimeView(ComputeAPIView):
    """``GET /os-hypervisors/{id}/uptime`` (up to 2.87): the host's ``uptime`` line as its compute
    worker last reported it; 400 while that worker is down, as Nova answers when it cannot ask it."""

    def get(self, request: Request, hypervisor_id: str) -> Response:
        if self.version >= (2, 88):
            raise NotFound("The resource could not be found.")
        authorize(self.ctx, "os_compute_api:os-hypervisors:uptime")
        cn = svc.node_get(hypervisor_id)
        body = present_node(cn, self.version, detail=False)
        if body["state"] != "up":
            raise Invalid(f"Compute service of {cn.node.host} is unavailable at this time.")
        if not cn.node.host_uptime:
            raise NotImplementedYet("Virt driver does not implement uptime function.")
        return Response({"hypervisor": {**body, "uptime": cn.node.host_uptime}})


class HypervisorSearchView(ComputeAPIView):
    """``/os-hypervisors/{pattern}/search`` and ``/servers`` (up to 2.52)."""

    with_servers = False

    def get(self, request: Request, pattern: str) -> Response:
        if self.version >= (2, 53):
            raise NotFound("The resource could not be found.")
        authorize(self.ctx, "os_compute_api:os-hypervisors:servers" if self.with_servers
                  else "os_compute_api:os-hypervisors:search")
        nodes = svc.node_list(hostname_pattern=pattern)
        if not nodes:
            raise NotFound(f"No hypervisor matching '{pattern}' could be found.")
        return Response({"hypervisors": [
            present_node(cn, self.version, detail=False, servers=svc.node_servers(cn) if self.with_servers else None)
            for cn in nodes]})


class HypervisorServersView(HypervisorSearchView):
    with_servers = True

"""``os-services`` and ``os-hypervisors`` (admin), across every cell, per microversion:
integer ids below 2.53, uuids from 2.53 (with ``PUT /os-services/{uuid}``), the legacy
``PUT /os-services/{enable|disable|disable-log-reason|force-down}`` below 2.53, and from 2.88 the
hypervisor body without the old statistics."""
from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.validation import validate
from cloudcore.core.api.versioned import present
from cloudcore.core.api.views import ComputeAPIView
from cloudcore.core.exceptions import Invalid, NotFound, NotImplementedYet
from cloudcore.core.policy import authorize
from scheduling.services.aggregates import host_availability_zone

from ..presenter import HOSTS_FEATURES, NODE_FIELDS, SERVICE_FIELDS, ShownNode, ShownService
from ..services import services_admin as svc


def _zone(cs: svc.CellService) -> str:
    if cs.service.binary != "nova-compute":
        return "internal"

    return host_availability_zone(cs.service.host)


def present_service(cs: svc.CellService, version: tuple[int, int]) -> dict[str, Any]:
    return present(SERVICE_FIELDS, ShownService(cs, _zone(cs)), version)


class ServicesView(ComputeAPIView):
    query_parameters = frozenset({"host", "binary"})

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
        if not HOSTS_FEATURES.has("by_uuid", self.version):
            return self._legacy(service_id, body)
        validate(body, UPDATE_253)
        status = body.get("status")
        cs = svc.service_update(actor=self.ctx, service_id=service_id, status=status.lower() if status else None,
                                disabled_reason=body.get("disabled_reason"), forced_down=body.get("forced_down"))
        return Response({"service": present_service(cs, self.version)})

    def _legacy(self, action: str, body: Any) -> Response:
        if action not in ("enable", "disable", "disable-log-reason", "force-down"):
            raise NotFound(f"Unknown action {action}")
        if action == "force-down" and not HOSTS_FEATURES.has("force_down", self.version):
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
    up = bool(cn.service and svc.service_is_up(cn.service))
    return present(NODE_FIELDS, ShownNode(cn, up, detail, servers), version)


def _with_servers(request: Request, version: tuple[int, int]) -> bool:
    value = request.query_params.get("with_servers", "false").lower()
    if value not in ("true", "false", "1", "0", "yes", "no"):
        raise Invalid("Invalid input for query parameters with_servers.")
    return HOSTS_FEATURES.has("by_uuid", version) and value in ("true", "1", "yes")


class HypervisorsView(ComputeAPIView):
    query_parameters = frozenset({"hypervisor_hostname_pattern", "with_servers", "limit", "marker"})
    detail = False

    def get(self, request: Request) -> Response:
        authorize(self.ctx, "os_compute_api:os-hypervisors:list-detail" if self.detail
                  else "os_compute_api:os-hypervisors:list")
        by_query = HOSTS_FEATURES.has("by_uuid", self.version)
        pattern = request.query_params.get("hypervisor_hostname_pattern") if by_query else None
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
    query_parameters = frozenset({"with_servers"})

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
        if HOSTS_FEATURES.has("by_uuid", self.version):
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

"""Operating compute services across cells: list, enable/disable (with reason), force down,
delete; and the hypervisors (compute nodes) view. Every cell is asked (scatter-gather)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cells import services as cell_services
from cells.context import target_cell
from cells.scatter import failed, scatter_gather
from cells.selectors import cell_list
from cells.transactions import atomic
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import Conflict, Invalid, NotFound
from cloudcore.core.policy import authorize
from scheduling.placement import services as placement
from servers import selectors as server_selectors

from ..models import ComputeNode, Service
from .registration import service_notify
from .servicegroup import service_is_up

if TYPE_CHECKING:
    from cells.models import CellMapping


class ServiceNotFound(NotFound):
    message = "Service %(service_id)s could not be found."


class HypervisorNotFound(NotFound):
    message = "Hypervisor with ID %(hypervisor_id)s could not be found."


@dataclass
class CellService:
    service: Service
    cell: CellMapping

    @property
    def up(self) -> bool:
        return service_is_up(self.service)


@dataclass
class CellNode:
    node: ComputeNode
    service: Service | None
    cell: CellMapping


def _cells() -> list[CellMapping]:
    return cell_list(cell0=False)


def service_list(*, host: str | None = None, binary: str | None = None) -> list[CellService]:
    def per_cell(cell: CellMapping) -> list[CellService]:
        qs = Service.objects.all().order_by("id")
        if host:
            qs = qs.filter(host=host)
        if binary:
            qs = qs.filter(binary=binary)
        return [CellService(s, cell) for s in qs]

    out: list[CellService] = []
    for result in scatter_gather(per_cell, _cells()).values():
        if not failed(result):
            out.extend(result)  # type: ignore[arg-type]
    return sorted(out, key=lambda cs: (cs.service.host, cs.service.binary))


def service_get(service_id: str) -> CellService:
    """By uuid (2.53+) or, with one cell holding it, by integer id."""
    for cs in service_list():
        if cs.service.uuid == service_id or str(cs.service.id) == str(service_id):
            return cs
    raise ServiceNotFound(service_id=service_id)


def service_find(*, host: str, binary: str) -> CellService:
    found = service_list(host=host, binary=binary)
    if not found:
        raise ServiceNotFound(service_id=f"{binary} on host {host}")
    return found[0]


def service_update(*, actor: RequestContext, service_id: str | None = None, host: str | None = None,
                   binary: str | None = None, status: str | None = None, disabled_reason: str | None = None,
                   forced_down: bool | None = None) -> CellService:
    """Enable/disable (reason only with disabled) and force down (nova-compute only) the service
    named by ``service_id`` (2.53+: its uuid) or by ``host`` and ``binary`` (the legacy actions).

    Side effects: the Service row in its cell; a nova-compute's ``COMPUTE_STATUS_DISABLED`` trait
    in placement follows the status. Raises ``PolicyNotAuthorized``
    (``os_compute_api:os-services:update``, before any lookup), ``ServiceNotFound``, ``Invalid``.
    """
    authorize(actor, "os_compute_api:os-services:update")
    if service_id is not None:
        cs = service_get(service_id)
    else:
        assert host is not None and binary is not None
        cs = service_find(host=host, binary=binary)
    if disabled_reason is not None and status != "disabled":
        raise Invalid("Specifying 'disabled_reason' with status 'enabled' is invalid.")
    if forced_down is not None and cs.service.binary != "nova-compute":
        raise Invalid("Updating 'forced_down' is only supported for nova-compute services.")
    service = cs.service
    with target_cell(cs.cell):
        if status is not None:
            service.disabled = status == "disabled"
            service.disabled_reason = disabled_reason if service.disabled else None
        if forced_down is not None:
            service.forced_down = forced_down
        service.save()
        if status is not None and service.binary == "nova-compute":
            _sync_disabled_trait(service)
    if status is not None or forced_down is not None:  # Nova's: on a change of these fields only
        service_notify("update", service, _zone(service))
    return cs


def _zone(service: Service) -> str | None:
    """The availability zone of a compute service's host (None for the others)."""
    from scheduling.services.aggregates import host_availability_zone  # (scheduling reads hosts)

    return host_availability_zone(service.host) if service.binary == "nova-compute" else None


def _sync_disabled_trait(service: Service) -> None:
    for node in ComputeNode.objects.filter(service_id=service.id):
        if not placement.provider_exists(uuid=node.uuid):
            continue  # not reported to placement yet: the resource tracker marks it on start-up
        traits = set(placement.traits_get(rp=node.uuid))
        traits.discard("COMPUTE_STATUS_DISABLED")
        if service.disabled:
            traits.add("COMPUTE_STATUS_DISABLED")
        placement.traits_set(rp=node.uuid, traits=sorted(traits))


def service_delete(*, actor: RequestContext, service_id: str) -> None:
    """Soft-delete a service and its compute nodes in their cell. Raises ``PolicyNotAuthorized``
    (``os_compute_api:os-services:delete``, before the lookup), ``ServiceNotFound``, ``Conflict``
    for a compute that still hosts servers (Nova)."""
    authorize(actor, "os_compute_api:os-services:delete")
    cs = service_get(service_id)
    service = cs.service
    with target_cell(cs.cell):
        if service.binary == "nova-compute" and server_selectors.instances_on_hosts_exist([service.host]):
            raise Conflict("Unable to delete compute service that is hosting instances. Migrate or delete the "
                           "instances first.")
        nodes = list(ComputeNode.objects.filter(service_id=service.id))
        with atomic(cs.cell):
            for node in nodes:
                node.soft_delete()
            service.soft_delete()
    service_notify("delete", service, _zone(service))
    for node in nodes:
        if placement.provider_exists(uuid=node.uuid):
            placement.provider_delete(rp=node.uuid)
    if service.binary == "nova-compute":
        cell_services.host_mapping_delete(service.host)


def node_list(*, hostname_pattern: str | None = None) -> list[CellNode]:
    def per_cell(cell: CellMapping) -> list[CellNode]:
        qs = ComputeNode.objects.all().order_by("id")
        if hostname_pattern:
            qs = qs.filter(hypervisor_hostname__contains=hostname_pattern)
        services = {s.id: s for s in Service.objects.filter(binary="nova-compute")}
        return [CellNode(n, services.get(n.service_id) if n.service_id is not None else None, cell) for n in qs]

    out: list[CellNode] = []
    for result in scatter_gather(per_cell, _cells()).values():
        if not failed(result):
            out.extend(result)  # type: ignore[arg-type]
    return sorted(out, key=lambda cn: cn.node.hypervisor_hostname)


def node_get(hypervisor_id: str) -> CellNode:
    for cn in node_list():
        if cn.node.uuid == hypervisor_id or str(cn.node.id) == str(hypervisor_id):
            return cn
    raise HypervisorNotFound(hypervisor_id=hypervisor_id)


def node_servers(cn: CellNode) -> list[dict[str, Any]]:
    with target_cell(cn.cell):
        return [{"name": i.display_name, "uuid": i.uuid}
                for i in server_selectors.instances_on_node(cn.node.host, cn.node.hypervisor_hostname)]

"""A compute service's start-up (seed 2): every identity check first, then the writes.

``check_startup`` reads the database and the hypervisor and returns a ``StartupPlan`` or raises
``InvalidConfiguration`` with the reference's message; it writes nothing, so a refused start
leaves the databases and the state path untouched. ``apply_startup`` then persists the node
uuid (if new), registers the Service and the ComputeNode (linked by id) in the host's cell, links
the host's instances to their node (``compute_id``), reports resources to placement over its HTTP
API, destroys the guests of the servers evacuated from it while it was down
(``ops.destroy_evacuated_instances``) and casts ``compute_host_started`` to the conductor, which
maps the host to its cell (the compute writes only its own cell's database).
"""
from __future__ import annotations

import logging
import socket
import time
import uuid as uuidlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from keystoneauth1 import exceptions as ks_exceptions

from cells.context import target_cell
from cells.transactions import atomic
from cloudcore.core.exceptions import InvalidConfiguration
from conductor import rpc as conductor_rpc
from hosts import selectors as host_selectors
from hosts.services.registration import compute_node_register, compute_service_register
from servers.services.data_migrations import instances_compute_link

from . import identity
from .ops import destroy_evacuated_instances
from .resource_tracker import report_to_placement

if TYPE_CHECKING:
    from cells.models import CellMapping
    from hosts.models import ComputeNode, Service

log = logging.getLogger(__name__)

#: The service version from which every compute has an identity file (Nova: 65).
NODE_IDENTITY_VERSION = 65
#: This code's nova-compute service version (cross-cell resize needs >= 47).
SERVICE_VERSION = 66
BINARY = "nova-compute"
#: how long a starting compute waits for placement to answer (the cloud's processes start together)
PLACEMENT_WAIT = 60.0


@dataclass
class StartupPlan:
    host: str
    cell: CellMapping
    node_uuid: str
    write_identity: bool
    service: Service | None
    node: ComputeNode | None  # the existing row (possibly soft-deleted) with this uuid
    hypervisor_hostname: str


def _refuse(message: str) -> InvalidConfiguration:
    return InvalidConfiguration(message)


def check_startup(*, host: str, cell: CellMapping, driver: Any, state_path: Path,
                  config_file: Path | None = None) -> StartupPlan:
    """Every start-up refusal of seed 2, checked before any write."""
    hv_hostname = driver.hypervisor_hostname()
    with target_cell(cell):
        service = host_selectors.service_for_host(host, binary=BINARY)
        node_uuid = identity.read_node_uuid(state_path, config_file)
        write = False
        if node_uuid is None:
            if service is not None and service.version >= NODE_IDENTITY_VERSION:
                raise _refuse("No local node identity found, but this is not our first startup on this host. "
                              "Refusing to start after potentially having lost that state!")
            if service is not None:
                nodes = host_selectors.compute_node_uuids(host)
                if not nodes:
                    raise _refuse(f"Compute service on host {host} is upgrading to stable node identity but found no "
                                  "nodes in the database. Possible rename detected, refusing to start!")
                if len(nodes) > 1:
                    raise _refuse("Multiple nodes found in database, manual node uuid configuration required")
                node_uuid = nodes[0]
            else:
                if driver.list_instance_uuids():
                    raise _refuse("My hypervisor has existing instances, but I appear to be a new service in this "
                                  "database. Possible database configuration error, refusing to start!")
                node_uuid = str(uuidlib.uuid4())
            write = True
        node = host_selectors.compute_node_get_any(node_uuid)
        if node is not None:
            if node.hypervisor_hostname != hv_hostname:
                raise _refuse(f"My compute node {node.uuid} has hypervisor_hostname {node.hypervisor_hostname} but "
                              f"virt driver reports it should be {hv_hostname}. Possible rename detected, refusing "
                              "to start!")
            if node.host and node.host != host:
                raise _refuse(f"My node {node.uuid} has host '{node.host}' but my host is '{host}'; Possible rename "
                              "detected, refusing to start!")
        else:
            clash = host_selectors.compute_node_for_host(host, hv_hostname)
            if clash is not None:
                raise _refuse(f"Duplicate compute node record found for host {host} node {hv_hostname}")
    return StartupPlan(host, cell, node_uuid, write, service, node, hv_hostname)


def apply_startup(plan: StartupPlan, *, driver: Any, state_path: Path) -> tuple[Service, ComputeNode]:
    """Persist the checked plan: identity file, Service, ComputeNode, placement; the conductor maps
    the host."""
    if plan.write_identity:
        identity.write_node_uuid(state_path, plan.node_uuid)
    resources = {**driver.get_available_resource(), "host_ip": my_ip()}

    with target_cell(plan.cell), atomic(plan.cell):
        service = compute_service_register(host=plan.host, binary=BINARY, version=SERVICE_VERSION,
                                           service=plan.service)
        node = compute_node_register(uuid=plan.node_uuid, host=plan.host, service_id=service.id,
                                     hypervisor_hostname=plan.hypervisor_hostname, resources=resources,
                                     node=plan.node)
        # Nova's _ensure_compute_id_for_instances: this node's servers get their compute_id
        instances_compute_link(host=plan.host, node=node.hypervisor_hostname, compute_id=node.id)
    _report_when_placement_answers(node=node, service=service, driver=driver)
    with target_cell(plan.cell):
        # the guests of servers evacuated while this host was down go, and the allocations their
        # evacuations kept here (after the first report: placement answers by then)
        destroy_evacuated_instances(host=plan.host, driver=driver)
    conductor_rpc.compute_host_started(host=plan.host, cell_uuid=str(plan.cell.uuid))
    return service, node


def my_ip() -> str:
    """This host's IP address (Nova's ``my_ip``): ``MY_IP``, else the address of the interface the
    default route leaves by (a UDP socket's local end after ``connect``, which sends nothing), else
    127.0.0.1."""
    if settings.MY_IP:
        return str(settings.MY_IP)
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: routed by the default route, never reached
            return str(probe.getsockname()[0])
    except OSError:
        return "127.0.0.1"


def _report_when_placement_answers(*, node: ComputeNode, service: Service, driver: Any) -> None:
    """The first report, read from placement afresh; while the API cannot be reached yet (it starts
    with the computes) it is retried for ``PLACEMENT_WAIT`` seconds."""
    deadline = time.monotonic() + PLACEMENT_WAIT
    while True:
        try:
            report_to_placement(node=node, service=service, driver=driver, refresh=True)
            return
        except (ks_exceptions.ConnectFailure, ks_exceptions.DiscoveryFailure, ks_exceptions.ServiceUnavailable):
            if time.monotonic() >= deadline:
                raise
            log.info("placement does not answer yet; %s retries its first report", node.host)
            time.sleep(2)

"""Small read-mostly routes of a server and of the API that old and new clients call:

- ``/servers/{id}/os-server-password`` (GET, DELETE): the encrypted password a guest posted;
- ``/servers/{id}/topology`` (2.78): the guest's NUMA topology. cloudcore places no guest on NUMA
  cells (no ``hw:numa_*`` flavor extra specs are honoured), so every server answers as a Nova
  server without a NUMA topology does: no nodes, no page size;
- ``/extensions`` and ``/extensions/{alias}``: the deprecated v2 extension listing, for the
  extensions whose API cloudcore serves.
"""
from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.views import ComputeAPIView
from cloudcore.core.exceptions import NotFound
from cloudcore.core.policy import authorize

from ..services.password import server_password_clear, server_password_of
from .servers import get_server

TOPOLOGY = (2, 78)


class ServerPasswordView(ComputeAPIView):
    def get(self, request: Request, server_id: str) -> Response:
        record = get_server(self.ctx, server_id, "os_compute_api:os-server-password:show")
        return Response({"password": server_password_of(record)})

    def delete(self, request: Request, server_id: str) -> Response:
        server_password_clear(actor=self.ctx, record=get_server(self.ctx, server_id))
        return Response(status=204)


class ServerTopologyView(ComputeAPIView):
    available_from = TOPOLOGY

    def get(self, request: Request, server_id: str) -> Response:
        get_server(self.ctx, server_id, "compute:server:topology:index")
        return Response({"nodes": [], "pagesize_kb": None})


# (alias, name, description): the v2 extensions whose API is here.
_EXTENSIONS = [
    ("OS-DCF", "DiskConfig", "Disk management of a server (OS-DCF:diskConfig)."),
    ("OS-EXT-AZ", "ExtendedAvailabilityZone", "The availability zone of a server."),
    ("OS-EXT-IPS", "ExtendedIps", "The type of each address of a server."),
    ("OS-EXT-IPS-MAC", "ExtendedIpsMac", "The MAC address of each address of a server."),
    ("OS-EXT-SRV-ATTR", "ExtendedServerAttributes", "Host, node and instance name of a server."),
    ("OS-EXT-STS", "ExtendedStatus", "vm_state, task_state and power_state of a server."),
    ("OS-FLV-EXT-DATA", "FlavorExtraData", "Ephemeral disk size of a flavor."),
    ("OS-SRV-USG", "ServerUsage", "Launch and termination times of a server."),
    ("os-admin-actions", "AdminActions", "Reset the state of a server."),
    ("os-aggregates", "Aggregates", "Host aggregates."),
    ("os-attach-interfaces", "AttachInterfaces", "Attach and detach ports of a server."),
    ("os-availability-zone", "AvailabilityZone", "Availability zones."),
    ("os-console-auth-tokens", "ConsoleAuthTokens", "Console connection details behind a token."),
    ("os-console-output", "ConsoleOutput", "The serial console log of a server."),
    ("os-consoles", "Consoles", "Consoles of servers."),
    ("os-create-backup", "CreateBackup", "Backups of a server with rotation."),
    ("os-deferred-delete", "DeferredDelete", "Restore and force-delete soft-deleted servers."),
    ("os-extended-volumes", "ExtendedVolumes", "The volumes attached to a server."),
    ("os-flavor-access", "FlavorAccess", "Access to private flavors."),
    ("os-flavor-extra-specs", "FlavorExtraSpecs", "Extra specs of flavors."),
    ("os-flavor-manage", "FlavorManage", "Flavor creation and deletion."),
    ("os-hosts", "Hosts", "Compute hosts (up to 2.42)."),
    ("os-hypervisors", "Hypervisors", "Hypervisors of the cloud."),
    ("os-instance-actions", "InstanceActions", "The actions taken on a server."),
    ("os-keypairs", "Keypairs", "Key pairs."),
    ("os-lock-server", "LockServer", "Lock and unlock a server."),
    ("os-migrate-server", "MigrateServer", "Cold migration of a server."),
    ("os-migrations", "Migrations", "Migrations of servers."),
    ("os-networks", "Networks", "Networks (proxy, up to 2.35)."),
    ("os-pause-server", "PauseServer", "Pause and unpause a server."),
    ("os-quota-class-sets", "QuotaClasses", "Default quotas."),
    ("os-quota-sets", "Quotas", "Quotas of projects."),
    ("os-remote-consoles", "RemoteConsoles", "Serial and VNC consoles of a server."),
    ("os-rescue", "Rescue", "Rescue and unrescue a server."),
    ("os-security-groups", "SecurityGroups", "Security groups of servers."),
    ("os-server-external-events", "ServerExternalEvents", "Events sent by other services."),
    ("os-server-groups", "ServerGroups", "Server groups."),
    ("os-server-password", "ServerPassword", "The encrypted password of a server."),
    ("os-services", "Services", "Compute services."),
    ("os-shelve", "Shelve", "Shelve and unshelve servers."),
    ("os-simple-tenant-usage", "SimpleTenantUsage", "Usage of projects over a period."),
    ("os-suspend-server", "SuspendServer", "Suspend and resume a server."),
    ("os-tenant-networks", "TenantNetworks", "The networks of a project (proxy, up to 2.35)."),
    ("os-volumes", "Volumes", "Volume attachments of servers."),
]


def _extension(alias: str, name: str, description: str) -> dict[str, Any]:
    return {"alias": alias, "name": name, "description": description, "links": [],
            "namespace": "http://docs.openstack.org/compute/ext/fake_xml", "updated": "2014-12-03T00:00:00Z"}


class ExtensionsView(ComputeAPIView):
    def get(self, request: Request) -> Response:
        authorize(self.ctx, "os_compute_api:extensions", {"project_id": self.ctx.project_id})
        return Response({"extensions": [_extension(*row) for row in _EXTENSIONS]})


class ExtensionView(ComputeAPIView):
    def get(self, request: Request, alias: str) -> Response:
        authorize(self.ctx, "os_compute_api:extensions", {"project_id": self.ctx.project_id})
        for row in _EXTENSIONS:
            if row[0] == alias:
                return Response({"extension": _extension(*row)})
        raise NotFound("Extension could not be found.")

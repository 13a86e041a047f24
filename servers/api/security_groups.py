"""``GET /servers/{id}/os-security-groups``: the server's security groups in Nova's shape (ingress rules
only, a rule names either its remote group or its IP range)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.views import ComputeAPIView

from ..services.security_groups import server_security_groups
from .servers import get_server

if TYPE_CHECKING:  # annotations only: other apps read networks through its services
    from networks.models import SecurityGroup, SecurityGroupRule

#: Protocols for which Nova shows a rule without ports as the whole port range (else -1/-1).
_RANGED = {"tcp", "udp"}


def _rule(rule: SecurityGroupRule) -> dict[str, Any]:
    low, high = rule.port_range_min, rule.port_range_max
    if rule.protocol and low is None and high is None:
        low, high = (1, 65535) if rule.protocol.lower() in _RANGED else (-1, -1)
    body: dict[str, Any] = {"id": rule.id, "parent_group_id": rule.security_group_id, "ip_protocol": rule.protocol,
                            "from_port": low, "to_port": high, "group": {}, "ip_range": {}}
    if rule.remote_group is not None:
        body["group"] = {"name": rule.remote_group.name, "tenant_id": rule.remote_group.project_id}
    else:
        body["ip_range"] = {"cidr": rule.remote_ip_prefix or ("::/0" if rule.ethertype == "IPv6" else "0.0.0.0/0")}
    return body


def present_nova_security_group(group: SecurityGroup) -> dict[str, Any]:
    rules = group.rules.filter(direction="ingress").select_related("remote_group").order_by("created_at", "id")
    return {"id": group.id, "name": group.name, "description": group.description, "tenant_id": group.project_id,
            "rules": [_rule(r) for r in rules]}


class ServerSecurityGroupsView(ComputeAPIView):
    def get(self, request: Request, server_id: str) -> Response:
        record = get_server(self.ctx, server_id, version=self.version)
        groups = server_security_groups(actor=self.ctx, instance_uuid=record.uuid, project_id=record.project_id)
        return Response({"security_groups": [present_nova_security_group(g) for g in groups]})

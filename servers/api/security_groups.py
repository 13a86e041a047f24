"""``GET /servers/{id}/os-security-groups``: the server's security groups in Nova's shape (ingress rules
only, a rule names either its remote group or its IP range); and Nova's proxy of the groups themselves
(``/os-security-groups``, ``/os-security-group-rules``) up to 2.35."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.api.paging import offset_page
from cloudcore.core.api.validation import validate
from cloudcore.core.api.views import ComputeAPIView, ComputeProxyAPIView

from ..services import security_group_proxy as proxy
from ..services.security_groups import server_security_groups
from .servers import get_server

if TYPE_CHECKING:  # annotations only: other apps read networks through its services
    from networks.models import SecurityGroup, SecurityGroupRule

#: Protocols for which Nova shows a rule without ports as the whole port range (else -1/-1).
_RANGED = {"tcp", "udp"}


def present_nova_rule(rule: SecurityGroupRule) -> dict[str, Any]:
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
            "rules": [present_nova_rule(r) for r in rules]}


class ServerSecurityGroupsView(ComputeAPIView):
    def get(self, request: Request, server_id: str) -> Response:
        record = get_server(self.ctx, server_id, version=self.version)
        groups = server_security_groups(actor=self.ctx, instance_uuid=record.uuid, project_id=record.project_id)
        return Response({"security_groups": [present_nova_security_group(g) for g in groups]})


# --- Nova's proxy of the network service's groups (gone from 2.36, as in Nova) ----------------------

_GROUP = {"type": "object", "properties": {"security_group": {"type": "object"}}, "required": ["security_group"]}
_RULE = {"type": "object", "properties": {"security_group_rule": {"type": "object"}},
         "required": ["security_group_rule"]}


class SecurityGroupsView(ComputeProxyAPIView):
    def get(self, request: Request) -> Response:
        all_tenants = request.query_params.get("all_tenants", "0").lower() not in ("0", "false", "no", "off")
        groups = proxy.group_list(actor=self.ctx, all_tenants="all_tenants" in request.query_params and all_tenants)
        return Response({"security_groups": [present_nova_security_group(g)
                                             for g in offset_page(groups, request.query_params)]})

    def post(self, request: Request) -> Response:
        body = self.body()
        validate(body, _GROUP)
        sg = body["security_group"]
        group = proxy.group_create(actor=self.ctx, name=sg.get("name"), description=sg.get("description"))
        return Response({"security_group": present_nova_security_group(group)})


class SecurityGroupView(ComputeProxyAPIView):
    def get(self, request: Request, group_id: str) -> Response:
        return Response({"security_group": present_nova_security_group(
            proxy.group_get(actor=self.ctx, group_id=group_id))})

    def put(self, request: Request, group_id: str) -> Response:
        body = self.body()
        validate(body, _GROUP)
        sg = body["security_group"]
        group = proxy.group_update(actor=self.ctx, group_id=group_id, name=sg.get("name"),
                                   description=sg.get("description"))
        return Response({"security_group": present_nova_security_group(group)})

    def delete(self, request: Request, group_id: str) -> Response:
        proxy.group_delete(actor=self.ctx, group_id=group_id)
        return Response(status=202)


class SecurityGroupRulesView(ComputeProxyAPIView):
    def post(self, request: Request) -> Response:
        body = self.body()
        validate(body, _RULE)
        rule = proxy.rule_create(actor=self.ctx, body=body["security_group_rule"])
        return Response({"security_group_rule": present_nova_rule(rule)})


class SecurityGroupRuleView(ComputeProxyAPIView):
    def delete(self, request: Request, rule_id: str) -> Response:
        proxy.rule_delete(actor=self.ctx, rule_id=rule_id)
        return Response(status=202)

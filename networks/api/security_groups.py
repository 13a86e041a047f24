"""Neutron's ``/v2.0/security-groups`` (with tags) and ``/v2.0/security-group-rules``: bodies, filters,
``fields=`` selection and error bodies as Neutron's."""
from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from cloudcore.core.exceptions import Invalid

from .. import secgroups
from ..models import SecurityGroup, SecurityGroupRule
from .views import NeutronView, _ts


def present_rule(r: SecurityGroupRule) -> dict[str, Any]:
    return {
        "id": r.id, "security_group_id": r.security_group_id, "tenant_id": r.project_id, "project_id": r.project_id,
        "direction": r.direction, "ethertype": r.ethertype, "protocol": r.protocol,
        "port_range_min": r.port_range_min, "port_range_max": r.port_range_max,
        "remote_ip_prefix": r.remote_ip_prefix, "normalized_cidr": secgroups.normalized_cidr(r.remote_ip_prefix),
        "remote_group_id": r.remote_group_id, "remote_address_group_id": None, "description": r.description,
        "created_at": _ts(r.created_at), "updated_at": _ts(r.updated_at or r.created_at),
        "revision_number": r.revision_number,
    }


def present_group(g: SecurityGroup) -> dict[str, Any]:
    return {
        "id": g.id, "name": g.name, "description": g.description, "tenant_id": g.project_id,
        "project_id": g.project_id, "stateful": g.stateful, "shared": False, "tags": list(g.tags),
        "security_group_rules": [present_rule(r) for r in sorted(g.rules.all(), key=lambda r: (r.created_at, r.id))],
        "created_at": _ts(g.created_at), "updated_at": _ts(g.updated_at or g.created_at),
        "revision_number": g.revision_number,
    }


GROUP_CREATE_ATTRIBUTES = {"name", "description", "stateful", "project_id", "tenant_id"}
GROUP_UPDATE_ATTRIBUTES = {"name", "description", "stateful"}
RULE_CREATE_ATTRIBUTES = {"security_group_id", "direction", "ethertype", "protocol", "port_range_min",
                          "port_range_max", "remote_ip_prefix", "remote_group_id", "remote_address_group_id",
                          "description", "project_id", "tenant_id"}


def _known(body: dict[str, Any], known: set[str]) -> dict[str, Any]:
    unknown = sorted(set(body) - known)
    if unknown:
        raise Invalid(f"Unrecognized attribute(s) '{', '.join(unknown)}'")
    return body


class SecurityGroupsView(NeutronView):
    def get(self, request: Request) -> Response:
        groups = secgroups.security_group_list(self.ctx, filters=self._filters())
        return Response({"security_groups": [self._fields(present_group(g)) for g in groups]})

    def post(self, request: Request) -> Response:
        body = _known(self._resource("security_group"), GROUP_CREATE_ATTRIBUTES)
        group = secgroups.security_group_create(
            self.ctx, name=str(body.get("name") or ""), description=str(body.get("description") or ""),
            stateful=secgroups.as_bool(body.get("stateful", True), "stateful"),
            project_id=body.get("project_id") or body.get("tenant_id"))
        return Response({"security_group": present_group(group)}, status=201)


class SecurityGroupView(NeutronView):
    def get(self, request: Request, group_id: str) -> Response:
        return Response({"security_group": self._fields(present_group(secgroups.security_group_get(self.ctx,
                                                                                                   group_id)))})

    def put(self, request: Request, group_id: str) -> Response:
        body = _known(self._resource("security_group"), GROUP_UPDATE_ATTRIBUTES)
        group = secgroups.security_group_update(self.ctx, secgroups.security_group_get(self.ctx, group_id),
                                                changes=body)
        return Response({"security_group": present_group(group)})

    def delete(self, request: Request, group_id: str) -> Response:
        secgroups.security_group_delete(self.ctx, secgroups.security_group_get(self.ctx, group_id))
        return Response(status=204)


class SecurityGroupTagsView(NeutronView):
    """``/security-groups/{id}/tags``: list, replace all (PUT ``{"tags": [...]}``), remove all."""

    def get(self, request: Request, group_id: str) -> Response:
        return Response({"tags": list(secgroups.security_group_get(self.ctx, group_id).tags)})

    def put(self, request: Request, group_id: str) -> Response:
        data = request.data
        if not isinstance(data, dict) or not isinstance(data.get("tags"), list):
            raise Invalid("Invalid input for tags: a JSON object with a list 'tags' is required.")
        group = secgroups.security_group_set_tags(self.ctx, secgroups.security_group_get(self.ctx, group_id),
                                                  data["tags"])
        return Response({"tags": list(group.tags)})

    def delete(self, request: Request, group_id: str) -> Response:
        secgroups.security_group_set_tags(self.ctx, secgroups.security_group_get(self.ctx, group_id), [])
        return Response(status=204)


class SecurityGroupTagView(NeutronView):
    """``/security-groups/{id}/tags/{tag}``: check (204/404), add (201), remove (204/404)."""

    def get(self, request: Request, group_id: str, tag: str) -> Response:
        if tag not in secgroups.security_group_get(self.ctx, group_id).tags:
            raise secgroups.TagNotFound(resource="security_groups", resource_id=group_id, tag=tag)
        return Response(status=204)

    def put(self, request: Request, group_id: str, tag: str) -> Response:
        group = secgroups.security_group_get(self.ctx, group_id)
        secgroups.security_group_set_tags(self.ctx, group, [*group.tags, tag])
        return Response(status=201)

    def delete(self, request: Request, group_id: str, tag: str) -> Response:
        group = secgroups.security_group_get(self.ctx, group_id)
        if tag not in group.tags:
            raise secgroups.TagNotFound(resource="security_groups", resource_id=group_id, tag=tag)
        secgroups.security_group_set_tags(self.ctx, group, [t for t in group.tags if t != tag])
        return Response(status=204)


class SecurityGroupRulesView(NeutronView):
    def get(self, request: Request) -> Response:
        rules = secgroups.security_group_rule_list(self.ctx, filters=self._filters())
        return Response({"security_group_rules": [self._fields(present_rule(r)) for r in rules]})

    def post(self, request: Request) -> Response:
        body = _known(self._resource("security_group_rule"), RULE_CREATE_ATTRIBUTES)
        rule = secgroups.security_group_rule_create(self.ctx, body=body)
        return Response({"security_group_rule": present_rule(rule)}, status=201)


class SecurityGroupRuleView(NeutronView):
    def get(self, request: Request, rule_id: str) -> Response:
        return Response({"security_group_rule": self._fields(present_rule(
            secgroups.security_group_rule_get(self.ctx, rule_id)))})

    def delete(self, request: Request, rule_id: str) -> Response:
        secgroups.security_group_rule_delete(self.ctx, secgroups.security_group_rule_get(self.ctx, rule_id))
        return Response(status=204)

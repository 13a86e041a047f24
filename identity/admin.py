"""Django admin for identity: projects (with guardian's per-project grants), users (global rule
grants through ``user_permissions``), roles, tokens, and the policy rules with their defaults and
grants (granting a rule = giving its permission to a user or group, globally or on a project)."""
from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from guardian.admin import GuardedModelAdmin

from cloudcore.core import policy

from .models import PolicyRule, Project, Role, Token, User
from .services.policy_admin import describe_grant, sync_rule_permissions


@admin.register(Project)
class ProjectAdmin(GuardedModelAdmin):
    """"Object permissions" grants a policy rule (or a role) to a user or group on this project."""

    list_display = ("name", "id", "domain_id", "enabled")
    search_fields = ("name", "id")


@admin.register(User)
class UserAdmin(admin.ModelAdmin):
    list_display = ("name", "id", "domain_id", "enabled", "is_staff")
    search_fields = ("name", "id")
    filter_horizontal = ("groups", "user_permissions")
    exclude = ("password",)


@admin.register(Role)
class RoleAdmin(admin.ModelAdmin):
    list_display = ("name", "id", "description")


@admin.register(Token)
class TokenAdmin(admin.ModelAdmin):
    list_display = ("user", "project", "issued_at", "expires_at", "revoked")
    list_filter = ("revoked",)
    readonly_fields = ("id_hash", "user", "project", "methods", "issued_at", "expires_at", "audit_id",
                       "application_credential")


@admin.register(PolicyRule)
class PolicyRuleAdmin(admin.ModelAdmin):
    """Every rule of the registry with its default check, description and current grants."""

    list_display = ("codename", "default_check", "override", "description", "grants")
    search_fields = ("codename",)
    readonly_fields = ("codename", "default_check", "override", "description", "operations", "grants")
    fields = readonly_fields

    def get_queryset(self, request: HttpRequest) -> Any:
        sync_rule_permissions()
        return PolicyRule.objects.rules().order_by("codename")

    def _rule(self, obj: PolicyRule) -> policy.Rule | None:
        try:
            return policy.get_rule(obj.codename)
        except policy.UnknownRule:
            return None

    @admin.display(description="default")
    def default_check(self, obj: PolicyRule) -> str:
        rule = self._rule(obj)
        return rule.check if rule else "(not registered)"

    @admin.display(description="override (policy file)")
    def override(self, obj: PolicyRule) -> str:
        rule = self._rule(obj)
        return rule.effective_check if rule and rule.effective_check != rule.check else ""

    @admin.display(description="description")
    def description(self, obj: PolicyRule) -> str:
        rule = self._rule(obj)
        return rule.description if rule else ""

    @admin.display(description="operations")
    def operations(self, obj: PolicyRule) -> str:
        rule = self._rule(obj)
        return "; ".join(f"{m} {p}" for m, p in rule.operations) if rule else ""

    @admin.display(description="grants")
    def grants(self, obj: PolicyRule) -> str:
        if self._rule(obj) is None:
            return ""
        return ", ".join(describe_grant(g) for g in policy.grants_of(obj.codename)) or "-"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

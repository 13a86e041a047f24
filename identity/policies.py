"""Identity (Keystone) policy rules, Keystone's names and defaults (simplified personas)."""
from __future__ import annotations

from cloudcore.core.policy import register

ADMIN = "admin"

RULES: list[tuple[str, str, str, list[tuple[str, str]]]] = [
    ("identity:list_projects", ADMIN, "List projects", [("GET", "/v3/projects")]),
    ("identity:get_project", "project_reader_or_admin", "Show a project", [("GET", "/v3/projects/{project_id}")]),
    ("identity:create_project", ADMIN, "Create a project", [("POST", "/v3/projects")]),
    ("identity:update_project", ADMIN, "Update a project", [("PATCH", "/v3/projects/{project_id}")]),
    ("identity:delete_project", ADMIN, "Delete a project", [("DELETE", "/v3/projects/{project_id}")]),
    ("identity:list_users", ADMIN, "List users", [("GET", "/v3/users")]),
    ("identity:get_user", "admin_or_owner_user", "Show a user", [("GET", "/v3/users/{user_id}")]),
    ("identity:create_user", ADMIN, "Create a user", [("POST", "/v3/users")]),
    ("identity:update_user", ADMIN, "Update a user (name, password, enabled, ...)",
     [("PATCH", "/v3/users/{user_id}")]),
    ("identity:delete_user", ADMIN, "Delete a user", [("DELETE", "/v3/users/{user_id}")]),
    ("identity:list_user_projects", "admin_or_owner_user", "List the projects of a user",
     [("GET", "/v3/users/{user_id}/projects")]),
    ("identity:list_roles", ADMIN, "List roles", [("GET", "/v3/roles")]),
    ("identity:get_role", ADMIN, "Show a role", [("GET", "/v3/roles/{role_id}")]),
    ("identity:create_role", ADMIN, "Create a role", [("POST", "/v3/roles")]),
    ("identity:delete_role", ADMIN, "Delete a role", [("DELETE", "/v3/roles/{role_id}")]),
    ("identity:create_grant", ADMIN, "Assign a role to a user on a project",
     [("PUT", "/v3/projects/{project_id}/users/{user_id}/roles/{role_id}")]),
    ("identity:check_grant", ADMIN, "Check a role assignment",
     [("HEAD", "/v3/projects/{project_id}/users/{user_id}/roles/{role_id}"),
      ("GET", "/v3/projects/{project_id}/users/{user_id}/roles/{role_id}")]),
    ("identity:list_grants", ADMIN, "List the roles of a user on a project",
     [("GET", "/v3/projects/{project_id}/users/{user_id}/roles")]),
    ("identity:revoke_grant", ADMIN, "Unassign a role from a user on a project",
     [("DELETE", "/v3/projects/{project_id}/users/{user_id}/roles/{role_id}")]),
    ("identity:list_role_assignments", ADMIN, "List role assignments", [("GET", "/v3/role_assignments")]),
    ("identity:validate_token", "admin_or_owner_user", "Validate a token (the caller's own, or any for admins)",
     [("GET", "/v3/auth/tokens"), ("HEAD", "/v3/auth/tokens")]),
    ("identity:revoke_token", "admin_or_owner_user", "Revoke a token (the caller's own, or any for admins)",
     [("DELETE", "/v3/auth/tokens")]),
    ("identity:create_application_credential", "owner_user", "Create an application credential (one's own)",
     [("POST", "/v3/users/{user_id}/application_credentials")]),
    ("identity:list_application_credentials", "admin_or_owner_user", "List a user's application credentials",
     [("GET", "/v3/users/{user_id}/application_credentials")]),
    ("identity:get_application_credential", "admin_or_owner_user", "Show an application credential",
     [("GET", "/v3/users/{user_id}/application_credentials/{application_credential_id}")]),
    ("identity:delete_application_credential", "admin_or_owner_user", "Delete an application credential",
     [("DELETE", "/v3/users/{user_id}/application_credentials/{application_credential_id}")]),
    # cloudcore's own (Keystone has no such API): operators widen a policy rule in the web console
    ("identity:grant_policy_rule", ADMIN, "Grant a policy rule to a user, a group or a project's members",
     [("POST", "/policy/change/")]),
    ("identity:revoke_policy_rule", ADMIN, "Revoke a policy rule grant", [("POST", "/policy/change/")]),
]

for _name, _check, _description, _operations in RULES:
    register(_name, _check, _description, _operations)

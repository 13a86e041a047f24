"""Placement policy rules (Placement's names; every default is admin only), and cloudcore's own
scheduling explanation rules (admin only by default: traces name hosts)."""
from __future__ import annotations

from cloudcore.core.policy import register

ADMIN = "admin"

RULES: list[tuple[str, str, list[tuple[str, str]]]] = [
    ("placement:resource_providers:list", "List resource providers", [("GET", "/resource_providers")]),
    ("placement:resource_providers:create", "Create a resource provider", [("POST", "/resource_providers")]),
    ("placement:resource_providers:show", "Show a resource provider", [("GET", "/resource_providers/{uuid}")]),
    ("placement:resource_providers:update", "Update a resource provider",
     [("PUT", "/resource_providers/{uuid}")]),
    ("placement:resource_providers:delete", "Delete a resource provider",
     [("DELETE", "/resource_providers/{uuid}")]),
    ("placement:resource_providers:inventories:list", "List inventories of a resource provider",
     [("GET", "/resource_providers/{uuid}/inventories")]),
    ("placement:resource_providers:inventories:create", "Create one inventory of a resource provider",
     [("POST", "/resource_providers/{uuid}/inventories")]),
    ("placement:resource_providers:inventories:show", "Show one inventory of a resource provider",
     [("GET", "/resource_providers/{uuid}/inventories/{resource_class}")]),
    ("placement:resource_providers:inventories:update", "Replace or update inventories of a resource provider",
     [("PUT", "/resource_providers/{uuid}/inventories"),
      ("PUT", "/resource_providers/{uuid}/inventories/{resource_class}")]),
    ("placement:resource_providers:inventories:delete", "Delete inventories of a resource provider",
     [("DELETE", "/resource_providers/{uuid}/inventories"),
      ("DELETE", "/resource_providers/{uuid}/inventories/{resource_class}")]),
    ("placement:resource_providers:aggregates:list", "List aggregates of a resource provider",
     [("GET", "/resource_providers/{uuid}/aggregates")]),
    ("placement:resource_providers:aggregates:update", "Set aggregates of a resource provider",
     [("PUT", "/resource_providers/{uuid}/aggregates")]),
    ("placement:resource_providers:usages", "Show usages of a resource provider",
     [("GET", "/resource_providers/{uuid}/usages")]),
    ("placement:resource_providers:allocations:list", "List allocations against a resource provider",
     [("GET", "/resource_providers/{uuid}/allocations")]),
    ("placement:resource_providers:traits:list", "List traits of a resource provider",
     [("GET", "/resource_providers/{uuid}/traits")]),
    ("placement:resource_providers:traits:update", "Set traits of a resource provider",
     [("PUT", "/resource_providers/{uuid}/traits")]),
    ("placement:resource_providers:traits:delete", "Remove every trait of a resource provider",
     [("DELETE", "/resource_providers/{uuid}/traits")]),
    ("placement:resource_classes:list", "List resource classes", [("GET", "/resource_classes")]),
    ("placement:resource_classes:update", "Create a custom resource class",
     [("PUT", "/resource_classes/{name}")]),
    ("placement:traits:list", "List traits", [("GET", "/traits")]),
    ("placement:traits:show", "Show a trait", [("GET", "/traits/{name}")]),
    ("placement:traits:update", "Create a custom trait", [("PUT", "/traits/{name}")]),
    ("placement:traits:delete", "Delete a custom trait", [("DELETE", "/traits/{name}")]),
    ("placement:allocations:list", "List the allocations of a consumer", [("GET", "/allocations/{consumer_uuid}")]),
    ("placement:allocations:update", "Replace the allocations of a consumer",
     [("PUT", "/allocations/{consumer_uuid}")]),
    ("placement:allocations:delete", "Delete the allocations of a consumer",
     [("DELETE", "/allocations/{consumer_uuid}")]),
    ("placement:allocations:manage", "Replace the allocations of several consumers at once",
     [("POST", "/allocations")]),
    ("placement:allocation_candidates:list", "List allocation candidates", [("GET", "/allocation_candidates")]),
    ("placement:usages", "Show the usages of a project (and user)", [("GET", "/usages")]),
]

RULES += [
    ("cloudcore:os-scheduling-explanation:show",
     "Show the trace of a server's scheduling decision (cloudcore)",
     [("GET", "/servers/{server_id}/os-scheduling-explanation")]),
    ("cloudcore:os-scheduling-explanation:dry_run",
     "Ask whether a request would fit now, where, and what to change (cloudcore)",
     [("POST", "/os-scheduling-explanation")]),
]

for _name, _description, _operations in RULES:
    register(_name, ADMIN, _description, _operations)

"""Policy matrix, driven from the registry: every rule with an endpoint here × the six personas
(cloud admin, project admin, member, reader, another project's member, anonymous).

The expected outcome of each cell is the rule's registered default check evaluated for the persona
on the resource the request touches (the persona's own project and user); the endpoint must answer
403 exactly when that check denies, 401 for anonymous, and never 5xx.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from cells.models import HostMapping
from cloudcore.core import policy
from cloudcore.core.context import RequestContext
from identity.services.roles import roles_for
from identity.services.tokens import is_admin_project
from scheduling.services import aggregates
from servers.models import Flavor, FlavorExtraSpec, FlavorProject

from .conftest import ALL_DATABASES, PERSONAS, Personas

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES)

PUBLIC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFSDIj1b61Zm/8oFq6rs4ssESlCX1P4s9wZtQhv5zI05 t@example"


@dataclass(frozen=True)
class Call:
    method: str
    path: str
    body: Any = None
    version: str | None = None


World = dict[str, Any]
C = "/compute/v2.1"

#: rule -> the request exercising it (a function of the prepared world)
MATRIX: dict[str, Callable[[World], Call]] = {
    "os_compute_api:os-flavor-manage:create": lambda w: Call(
        "post", f"{C}/flavors", {"flavor": {"name": "mx", "ram": 1, "vcpus": 1, "disk": 0}}),
    "os_compute_api:os-flavor-manage:update": lambda w: Call(
        "put", f"{C}/flavors/1", {"flavor": {"description": "d"}}, "2.55"),
    "os_compute_api:os-flavor-manage:delete": lambda w: Call("delete", f"{C}/flavors/1"),
    "os_compute_api:os-flavor-extra-specs:index": lambda w: Call("get", f"{C}/flavors/1/os-extra_specs"),
    "os_compute_api:os-flavor-extra-specs:show": lambda w: Call("get", f"{C}/flavors/1/os-extra_specs/k"),
    "os_compute_api:os-flavor-extra-specs:create": lambda w: Call(
        "post", f"{C}/flavors/1/os-extra_specs", {"extra_specs": {"a": "b"}}),
    "os_compute_api:os-flavor-extra-specs:update": lambda w: Call(
        "put", f"{C}/flavors/1/os-extra_specs/k", {"k": "v2"}),
    "os_compute_api:os-flavor-extra-specs:delete": lambda w: Call("delete", f"{C}/flavors/1/os-extra_specs/k"),
    "os_compute_api:os-flavor-access": lambda w: Call("get", f"{C}/flavors/p1/os-flavor-access"),
    "os_compute_api:os-flavor-access:add_tenant_access": lambda w: Call(
        "post", f"{C}/flavors/p1/action", {"addTenantAccess": {"tenant": w["admin_project"]}}),
    "os_compute_api:os-flavor-access:remove_tenant_access": lambda w: Call(
        "post", f"{C}/flavors/p1/action", {"removeTenantAccess": {"tenant": w["demo2_project"]}}),
    "os_compute_api:os-keypairs:index": lambda w: Call("get", f"{C}/os-keypairs"),
    "os_compute_api:os-keypairs:create": lambda w: Call(
        "post", f"{C}/os-keypairs", {"keypair": {"name": "new", "public_key": PUBLIC_KEY}}),
    "os_compute_api:os-keypairs:show": lambda w: Call("get", f"{C}/os-keypairs/mine"),
    "os_compute_api:os-keypairs:delete": lambda w: Call("delete", f"{C}/os-keypairs/mine"),
    "os_compute_api:limits": lambda w: Call("get", f"{C}/limits"),
    "cloudcore:os-scheduling-explanation:dry_run": lambda w: Call(
        "post", f"{C}/os-scheduling-explanation", {"explain": {"flavorRef": "1"}}),
    "os_compute_api:os-aggregates:index": lambda w: Call("get", f"{C}/os-aggregates"),
    "os_compute_api:os-aggregates:create": lambda w: Call(
        "post", f"{C}/os-aggregates", {"aggregate": {"name": "new", "availability_zone": "az9"}}),
    "os_compute_api:os-aggregates:show": lambda w: Call("get", f"{C}/os-aggregates/{w['aggregate']}"),
    "os_compute_api:os-aggregates:update": lambda w: Call(
        "put", f"{C}/os-aggregates/{w['aggregate']}", {"aggregate": {"name": "renamed"}}),
    "os_compute_api:os-aggregates:delete": lambda w: Call("delete", f"{C}/os-aggregates/{w['empty_aggregate']}"),
    "os_compute_api:os-aggregates:add_host": lambda w: Call(
        "post", f"{C}/os-aggregates/{w['aggregate']}/action", {"add_host": {"host": "compute2"}}),
    "os_compute_api:os-aggregates:remove_host": lambda w: Call(
        "post", f"{C}/os-aggregates/{w['aggregate']}/action", {"remove_host": {"host": "compute1"}}),
    "os_compute_api:os-aggregates:set_metadata": lambda w: Call(
        "post", f"{C}/os-aggregates/{w['aggregate']}/action", {"set_metadata": {"metadata": {"a": "b"}}}),
    "os_compute_api:os-availability-zone:list": lambda w: Call("get", f"{C}/os-availability-zone"),
    "os_compute_api:os-availability-zone:detail": lambda w: Call("get", f"{C}/os-availability-zone/detail"),
    "identity:list_projects": lambda w: Call("get", "/identity/v3/projects"),
    "identity:create_project": lambda w: Call("post", "/identity/v3/projects", {"project": {"name": "p-new"}}),
    "identity:get_project": lambda w: Call("get", f"/identity/v3/projects/{w['own_project']}"),
    "identity:list_users": lambda w: Call("get", "/identity/v3/users"),
    "identity:get_user": lambda w: Call("get", f"/identity/v3/users/{w['own_user']}"),
    "identity:list_user_projects": lambda w: Call("get", f"/identity/v3/users/{w['own_user']}/projects"),
    "identity:list_roles": lambda w: Call("get", "/identity/v3/roles"),
    "identity:list_role_assignments": lambda w: Call("get", "/identity/v3/role_assignments"),
}


def _world(personas: Personas, cells: dict[str, Any], persona: str) -> World:
    Flavor.objects.create(flavorid="1", name="m1.tiny", vcpus=1, memory_mb=512, root_gb=1)
    private = Flavor.objects.create(flavorid="p1", name="private", vcpus=1, memory_mb=256, root_gb=1,
                                    is_public=False)
    FlavorExtraSpec.objects.create(flavor_id=Flavor.objects.get(flavorid="1").id, key="k", value="v")
    FlavorProject.objects.create(flavor=private, project_id=personas.other[1].id)
    for host in ("compute1", "compute2"):
        HostMapping.objects.create(host=host, cell=cells["cell1"])
    aggregate = aggregates.aggregate_create(name="agg", availability_zone="az1")
    aggregates.aggregate_add_host(aggregate=aggregate, host="compute1")
    empty = aggregates.aggregate_create(name="empty")
    world: World = {"admin_project": personas.admin[1].id, "demo2_project": personas.other[1].id,
                    "aggregate": aggregate.id, "empty_aggregate": empty.id}
    if persona != "anonymous":
        user, project = getattr(personas, persona)
        world.update(own_user=user.id, own_project=project.id)
        from servers.models import KeyPair
        from servers.services.keypairs import ssh_fingerprint

        KeyPair.objects.create(name="mine", user_id=user.id, public_key=PUBLIC_KEY,
                               fingerprint=ssh_fingerprint(PUBLIC_KEY))
    else:
        world.update(own_user="nobody", own_project="nobody")
    return world


def _default_allows(personas: Personas, persona: str, rule: str) -> bool:
    user, project = getattr(personas, persona)
    roles = roles_for(user=user, project=project)
    actor = RequestContext(user_id=user.id, project_id=project.id, roles=roles,
                           is_admin="admin" in roles and is_admin_project(project))
    return policy.get_rule(rule).default_allows(actor, {"project_id": project.id, "user_id": user.id})


def test_matrix_covers_the_registered_rules_of_these_endpoints() -> None:
    registered = {r.name for r in policy.rules()}
    assert set(MATRIX) <= registered
    prefixes = ("os_compute_api:os-flavor", "os_compute_api:os-keypairs", "os_compute_api:os-aggregates:",
                "os_compute_api:os-availability-zone")
    covered = {name for name in registered if name.startswith(prefixes)}
    assert covered <= set(MATRIX)


@pytest.mark.parametrize("persona", PERSONAS)
@pytest.mark.parametrize("rule", sorted(MATRIX))
def test_policy_matrix(personas: Personas, cells: dict[str, Any], rule: str, persona: str) -> None:
    # given the resources the request touches
    call = MATRIX[rule](_world(personas, cells, persona))
    # when the persona makes the request
    client = personas.client(persona, call.version)
    response = getattr(client, call.method)(call.path, call.body, format="json") if call.body is not None \
        else getattr(client, call.method)(call.path)
    # then it is refused exactly when the rule's default denies the persona
    assert response.status_code < 500, response.content
    if persona == "anonymous":
        assert response.status_code == 401
        return
    if _default_allows(personas, persona, rule):
        assert response.status_code not in (401, 403), (rule, persona, response.content)
        assert response.status_code < 400, (rule, persona, response.content)
    else:
        assert response.status_code == 403, (rule, persona, response.content)
        body = response.json()
        message = body["forbidden"]["message"] if "forbidden" in body else body["error"]["message"]
        assert message == f"Policy doesn't allow {rule} to be performed."

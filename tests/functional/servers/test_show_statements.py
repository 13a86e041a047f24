"""The requests clients repeat most, cheap and flat: ``GET /servers/{id}`` (what a client polls until
its server is ACTIVE) reads no policy grants once its user's are remembered, writes nothing and
stays within its statement budget; the compute workers' image and port reads cost the token row
and their own rows.

A grant or revoke is seen by the very next request, whoever made it: the remembered grants are
keyed by the identity change stamps read with the token, which every grant-bearing write bumps.
"Another process" is played by making the write with this process's own forgetting switched off
(``policy.changed``), so that only the stamps in the database can tell.

Query counts, not timed assertions."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.db import connections
from django.db.models import F
from django.test.utils import CaptureQueriesContext
from guardian.models import UserObjectPermission
from guardian.shortcuts import assign_perm, remove_perm
from rest_framework.test import APIClient

from cloudcore.core import policy
from identity.models import IdentityChangeStamp, Project, User
from identity.services import token_cache
from identity.services.service_user import service_user_ensure
from identity.services.tokens import token_issue
from networks.models import Port
from tests.conftest import ALL_DATABASES

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES)

RULE = "os_compute_api:os-extended-server-attributes"
HOST_FIELD = "OS-EXT-SRV-ATTR:host"
#: GET /servers/{id} at 2.90 of an ACTIVE server with a port, by a member: the token; the mapping
#: (its cell joined, its request spec as a subquery), the instance; the rows rendered (tags, volumes,
#: ports, floating IPs, security groups) in the mapping's cell, not found again among every cell
#: (a budget of 11, polls of 10, before the spec came with the mapping and a member stopped reading the service;
#: 8 before the tags and volumes were one statement, 7 before the fixed IPs and the ports' groups were)
SHOW_BUDGET = 6

# The round trips of a status poll, pinned per backend. A member's poll at 2.90 of an ACTIVE server
# with a port sends: the token's change stamps; the server's mapping with its cell joined and its
# request spec as a subquery (2.71's ``server_groups`` read from it: one statement where the spec was
# a second); its ports' fixed IPs and their security groups (one ``UNION ALL``), their floating IPs; in
# its cell the instance, then its tags and its attached volumes (one ``UNION ALL``). The compute
# service of its host is not read: the member may not see ``host_status`` (an admin's poll reads it).
# On PostgreSQL each statement is a round trip; on SQLite the same statements. 10 statements before
# (the spec read alone, the service read for a member), then 8 (the tags and the volumes read apart),
# then 7 (the fixed IPs and the groups read apart).

#: the statements of a member's poll of an ACTIVE server with a port, per backend
MEMBER_POLL = {"sqlite": 6, "postgresql": 6}
#: an admin's poll reads the host's compute service too (``host_status``, 2.16)
ADMIN_POLL = {"sqlite": 7, "postgresql": 7}


@pytest.fixture(autouse=True)
def _nothing_remembered() -> Iterator[None]:
    policy.changed()
    token_cache.clear()
    yield
    policy.changed()
    token_cache.clear()


@contextlib.contextmanager
def _statements() -> Iterator[list[str]]:
    sqls: list[str] = []
    with contextlib.ExitStack() as stack:
        captures = [stack.enter_context(CaptureQueriesContext(connections[alias])) for alias in ALL_DATABASES]
        yield sqls
    sqls.extend(q["sql"] for c in captures for q in c.captured_queries)


@contextlib.contextmanager
def _as_another_process(monkeypatch: Any) -> Iterator[None]:
    """Writes in the block leave this process's remembered grants alone: only the stamps move."""
    with monkeypatch.context() as m:
        m.setattr(policy, "changed", lambda: None)
        yield


def _show(cloud: Any, client: Any, server_id: str) -> dict[str, Any]:
    return cloud.show(client, server_id, version="2.90")


@pytest.fixture
def member_server(cloud: Any) -> tuple[Any, User, Project, str]:
    client = cloud.member()
    user = User.objects.get(name="demo")
    project = Project.objects.get(name="demo")
    server = cloud.create_server(client, "polled", networks="demo-net")
    assert _show(cloud, client, server["id"])["status"] == "ACTIVE"
    return client, user, project, server["id"]


def test_a_polled_show_reads_no_grants_writes_nothing_and_stays_in_budget(cloud: Any, member_server: Any) -> None:
    # given a member's server shown once (the user's grants loaded and remembered)
    client, _, _, server_id = member_server
    _show(cloud, client, server_id)
    # when it is shown again, and again
    counts = []
    for _ in range(2):
        with _statements() as sqls:
            body = _show(cloud, client, server_id)
        counts.append(len(sqls))
        # then no grant, permission or group membership is read, and nothing is written or locked
        assert not [s for s in sqls if "guardian_" in s or "auth_permission" in s or "identity_user_groups" in s], sqls
        assert not [s for s in sqls if s.split()[0].upper() in ("INSERT", "UPDATE", "DELETE", "BEGIN")], sqls
        # and the server's cell is the one joined to its mapping: the cells are not read
        assert not [s for s in sqls if s.startswith('SELECT "cells_cellmapping"')], sqls
    assert HOST_FIELD not in body
    # and the statements are within the budget, the same each time
    assert counts[0] == counts[1] <= SHOW_BUDGET, counts


def test_the_compute_workers_image_and_port_reads_cost_their_own_rows(cloud: Any, member_server: Any) -> None:
    # given the service user's client (as a compute worker's) that read an image and a port once
    service = service_user_ensure()
    client = APIClient()
    client.credentials(HTTP_X_AUTH_TOKEN=token_issue(user=service, project=Project.objects.get(name="admin")).value)
    port = Port.objects.get(device_id=member_server[3])
    image_url, port_url = f"/image/v2/images/{cloud.image_id}", f"/network/v2.0/ports/{port.id}"
    assert client.get(image_url).status_code == client.get(port_url).status_code == 200
    # when they are read again
    with _statements() as image_sqls:
        assert client.get(image_url).status_code == 200
    with _statements() as port_sqls:
        assert client.get(port_url).status_code == 200
    # then the image costs the token and the image; the port the token, the port, its IPs and groups
    assert len(image_sqls) == 2, image_sqls
    assert len(port_sqls) == 4, port_sqls


@pytest.mark.parametrize("how", ["object permission", "user permission", "group permission",
                                 "group object permission", "membership of a granted group"])
def test_a_grant_from_another_process_is_seen_by_the_next_show(cloud: Any, member_server: Any, monkeypatch: Any,
                                                                how: str) -> None:
    # given a member who does not see the extended attributes (its grants remembered)
    client, user, project, server_id = member_server
    assert HOST_FIELD not in _show(cloud, client, server_id)
    perm = policy.permission_for(RULE, create=True)
    group = Group.objects.create(name="operators")
    if how == "membership of a granted group":
        assign_perm(perm, group)
    elif how.startswith("group"):
        user.groups.add(group)
    assert HOST_FIELD not in _show(cloud, client, server_id)
    assert HOST_FIELD not in _show(cloud, client, server_id)
    # when another process grants the rule
    with _as_another_process(monkeypatch):
        if how == "object permission":
            assign_perm(perm, user, project)
        elif how == "user permission":
            user.user_permissions.add(perm)
        elif how == "group permission":
            group.permissions.add(perm)
        elif how == "group object permission":
            assign_perm(perm, group, project)
        else:
            user.groups.add(group)
    # then the very next show has them
    assert _show(cloud, client, server_id)[HOST_FIELD]


@pytest.mark.parametrize("how", ["object permission", "user permission", "group permission"])
def test_a_revoke_from_another_process_is_seen_by_the_next_show(cloud: Any, member_server: Any, monkeypatch: Any,
                                                                 how: str) -> None:
    # given a member granted the extended attributes, shown them (the grants remembered)
    client, user, project, server_id = member_server
    perm = policy.permission_for(RULE, create=True)
    group = Group.objects.create(name="operators")
    if how == "object permission":
        assign_perm(perm, user, project)
    elif how == "user permission":
        user.user_permissions.add(perm)
    else:
        user.groups.add(group)
        group.permissions.add(perm)
    assert _show(cloud, client, server_id)[HOST_FIELD]
    assert _show(cloud, client, server_id)[HOST_FIELD]
    # when another process revokes it
    with _as_another_process(monkeypatch):
        if how == "object permission":
            remove_perm(perm, user, project)
        elif how == "user permission":
            user.user_permissions.remove(perm)
        else:
            group.permissions.remove(perm)
    # then the very next show no longer has them
    assert HOST_FIELD not in _show(cloud, client, server_id)


def test_grants_are_remembered_until_the_stamps_move(cloud: Any, member_server: Any, monkeypatch: Any) -> None:
    # given a member's remembered grants
    client, user, project, server_id = member_server
    assert HOST_FIELD not in _show(cloud, client, server_id)
    # when a grant is written behind the signals' back (no stamp bumped)
    perm = policy.permission_for(RULE, create=True)
    with _as_another_process(monkeypatch):
        UserObjectPermission.objects.bulk_create([UserObjectPermission(
            user=user, permission=perm, content_type=perm.content_type, object_pk=str(project.pk))])
    # then it is not seen (the grants come from memory) ...
    assert HOST_FIELD not in _show(cloud, client, server_id)
    # ... until the user's stamp moves
    IdentityChangeStamp.objects.filter(key=user.pk).update(seq=F("seq") + 1)
    assert _show(cloud, client, server_id)[HOST_FIELD]


def _poll(cloud: Any, client: Any, server_id: str) -> tuple[dict[str, Any], list[str]]:
    cloud.show(client, server_id, version="2.90")  # warm: the token and grants remembered, statements built
    with _statements() as sqls:
        body = cloud.show(client, server_id, version="2.90")
    return body, sqls


def test_a_members_poll_reads_the_request_spec_with_the_mapping_and_no_service(cloud: Any) -> None:
    # given a member's ACTIVE server with a port, in a server group
    client = cloud.member()
    group = cloud.post(client, "os-server-groups", {"server_group": {"name": "g", "policies": ["affinity"]}},
                       version="2.1").json()["server_group"]
    server = cloud.create_server(client, "polled", networks="demo-net", hints={"group": group["id"]})
    # when it is polled
    body, sqls = _poll(cloud, client, server["id"])
    # then the body shows the group (read from the request spec) and no host status
    assert body["status"] == "ACTIVE" and body["server_groups"] == [group["id"]]
    assert "host_status" not in body
    # and the spec came with the mapping, in one statement; no compute service was read
    with_mapping = [s for s in sqls if "cells_instancemapping" in s]
    assert len(with_mapping) == 1 and "scheduling_requestspec" in with_mapping[0], sqls
    assert not [s for s in sqls if "scheduling_requestspec" in s and "cells_instancemapping" not in s], sqls
    assert not [s for s in sqls if "hosts_service" in s], sqls
    assert len(sqls) == MEMBER_POLL[connections["default"].vendor], sqls


def test_an_admins_poll_reads_the_host_status(cloud: Any) -> None:
    # given an admin and a member's ACTIVE server
    server = cloud.create_server(cloud.member(), "polled", networks="demo-net")
    # when the admin polls it
    body, sqls = _poll(cloud, cloud.admin(), server["id"])
    # then the host status is shown, read from the host's compute service
    assert body["host_status"] == "UP"
    assert len([s for s in sqls if "hosts_service" in s]) == 1, sqls
    assert len(sqls) == ADMIN_POLL[connections["default"].vendor], sqls

"""Grants are loaded once per actor (one request), and a grant in between is seen."""
from __future__ import annotations

from typing import Any

import pytest

from cloudcore.core import policy
from cloudcore.core.context import RequestContext
from tests.apihelpers import make_identity

pytestmark = pytest.mark.django_db
RULE = "os_compute_api:servers:show:host_status"


def test_many_checks_cost_one_grant_lookup(django_assert_max_num_queries: Any) -> None:
    user, project = make_identity("alice", project="demo", roles=["member"])
    actor = RequestContext(user_id=user.id, project_id=project.id, roles=["member", "reader"])
    # when a listing checks an admin-only rule for 100 servers
    with django_assert_max_num_queries(6):
        results = [policy.can(actor, RULE, {"project_id": project.id}) for _ in range(100)]
    # then all are denied and the grants were read once
    assert not any(results)


def test_a_grant_is_seen_by_the_same_actor() -> None:
    user, project = make_identity("alice", project="demo", roles=["member"])
    actor = RequestContext(user_id=user.id, project_id=project.id, roles=["member", "reader"])
    assert not policy.can(actor, RULE, {"project_id": project.id})
    policy.grant(RULE, user=user, project=project)
    assert policy.can(actor, RULE, {"project_id": project.id})
    assert not policy.can(actor, RULE, {"project_id": "other"})
    policy.revoke(RULE, user=user, project=project)
    assert not policy.can(actor, RULE, {"project_id": project.id})

"""Every rule of Nova's compute API is registered here under Nova's name with Nova's default, so
that an operator's ``policy.yaml`` written for Nova means the same here, and a 403 names the rule
Nova would name. ``nova_policy_defaults.json`` holds Nova's rules and defaults, printed from Nova
itself by ``scripts/nova_policy_defaults.py``. The few rules that stand apart are listed with the
reason."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from cloudcore.core import policy

NOVA = json.loads((Path(__file__).parent / "nova_policy_defaults.json").read_text())
#: Nova's default checks and the persona check of ``policy.CHECKS`` that says the same
SAME_AS = {
    "@": "any",
    "!": "nobody",
    "rule:context_is_admin": "admin",
    "rule:project_reader_or_admin": "project_reader_or_admin",
    "rule:project_member_or_admin": "project_member_or_admin",
    "rule:project_manager_or_admin": "project_manager_or_admin",
    "rule:service_or_admin": "service_or_admin",
    "(rule:context_is_admin) or user_id:%(user_id)s": "admin_or_owner_user",
}
#: Nova's rules that cloudcore does not register, or registers with another default, and why
APART = {
    # the seed asks for project admins (docs/unshelve-to-host.md); Nova narrowed it to admins since
    "os_compute_api:os-shelve:unshelve_to_host": "project_admin_or_admin",
    # APIs cloudcore does not have: bare metal nodes (Ironic's proxy), addFixedIp/removeFixedIp
    # (gone at 2.44: the CLI attaches an interface instead), virtiofs shares (2.97, Manila)
    "os_compute_api:os-baremetal-nodes:list": None,
    "os_compute_api:os-baremetal-nodes:show": None,
    "os_compute_api:os-multinic:add": None,
    "os_compute_api:os-multinic:remove": None,
    "os_compute_api:os-server-shares:create": None,
    "os_compute_api:os-server-shares:delete": None,
    "os_compute_api:os-server-shares:index": None,
    "os_compute_api:os-server-shares:show": None,
}


@pytest.mark.parametrize("name", sorted(NOVA["rules"]))
def test_novas_rule_is_registered_with_novas_default(name: str) -> None:
    registered = {r.name: r.check for r in policy.rules()}
    want = APART[name] if name in APART else SAME_AS[NOVA["rules"][name]]
    assert registered.get(name) == want, f"Nova {NOVA['nova']}: {name} defaults to {NOVA['rules'][name]}"


def test_every_compute_rule_registered_here_is_one_of_novas() -> None:
    # a rule of the compute API under a name Nova does not have is one a policy.yaml cannot reach
    ours = {r.name for r in policy.rules() if r.name.startswith(("os_compute_api:", "compute:", "network:"))}
    assert ours - set(NOVA["rules"]) == set()

"""Neutron's ``agent`` extension (``/v2.0/agents``): the agents a Neutron's network runs on (an L2 agent
per host, DHCP, L3 and metadata agents), which its admins list, disable and delete.

This cloud runs none. Its network service is the API processes themselves (addresses, routers and
floating IPs are records in the API database), and each compute host filters its own servers' ports
(``networks.firewall``). So the list is empty for everyone and every agent id is unknown (404
``AgentNotFound``), which is what Neutron answers where no agent has reported. A member's list is
empty in Neutron too: it drops the agents its admin-only ``get_agent`` rule hides rather than refuse
the list (Tempest's ``test_list_agents_non_admin`` checks that), so there is nothing for a rule to
decide here.
"""
from __future__ import annotations

from typing import Any

from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import NotFound


class AgentNotFound(NotFound):
    message = "Agent %(id)s could not be found."


def agent_list(ctx: RequestContext, *, filters: dict[str, Any]) -> list[dict[str, Any]]:
    """The agents ``ctx`` may see that match ``filters``: none (see the module docstring)."""
    return []


def agent_get(ctx: RequestContext, agent_id: str) -> dict[str, Any]:
    """The agent ``agent_id``; always AgentNotFound (404): this cloud has no agent."""
    raise AgentNotFound(id=agent_id)

"""Quotas of all three services with the real ``openstack`` CLI against the live cloud: the admin
sets a project's compute, network and volume limits in one ``quota set``, ``quota show`` reads them
back from Nova, Neutron and Cinder, ``quota show --default`` shows the defaults and ``quota delete``
takes the project back to them."""
from __future__ import annotations

from typing import Any

import pytest

from .cloud import LiveCloud

pytestmark = [pytest.mark.slow, pytest.mark.e2e]

ADMIN = "cloudcore-admin"


def limits(rows: Any) -> dict[str, Any]:
    """``quota show``'s rows (``Resource``/``Limit``) as a mapping; older clients answer a mapping."""
    return {row["Resource"]: row["Limit"] for row in rows} if isinstance(rows, list) else rows


def test_quota_set_show_default_and_delete_with_the_cli(live_cloud: LiveCloud) -> None:
    cloud = live_cloud
    project = cloud.openstack_json("project", "create", "quota-e2e", cloud=ADMIN)["id"]
    # when the admin sets one limit of each service
    cloud.openstack("quota", "set", "--networks", "7", "--volumes", "9", "--instances", "12", project, cloud=ADMIN)
    # then quota show reads all three back
    shown = limits(cloud.openstack_json("quota", "show", project, cloud=ADMIN))
    assert (shown["networks"], shown["volumes"], shown["instances"]) == (7, 9, 12), shown
    assert shown["ports"] == 500 and shown["gigabytes"] == 1000, shown
    # and the defaults are the services' own
    default = limits(cloud.openstack_json("quota", "show", "--default", project, cloud=ADMIN))
    assert (default["networks"], default["volumes"], default["instances"]) == (100, 10, 10), default
    # and a project's member may not change them
    refused = cloud.openstack("quota", "set", "--networks", "70", "demo", check=False)
    assert refused.returncode != 0, refused.stdout
    # when the admin deletes them, the project is back to the defaults
    cloud.openstack("quota", "delete", project, cloud=ADMIN)
    after = limits(cloud.openstack_json("quota", "show", project, cloud=ADMIN))
    assert (after["networks"], after["volumes"], after["instances"]) == (100, 10, 10), after
    cloud.openstack("project", "delete", project, cloud=ADMIN)

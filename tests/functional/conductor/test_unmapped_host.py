"""A compute host the scheduler chose before the conductor handled its start-up cast
(``compute_host_started``): its node is in its cell and in placement, but it has no host mapping
yet. The conductor maps it then, as the cast would, and builds the server there; it buried the
server in cell0 ("Host compute2 is not mapped to any cell"), which a user booting right after a host
started saw as ERROR."""
from __future__ import annotations

import pytest

from cells.models import HostMapping
from tests.cloud import build_cloud
from tests.conftest import ALL_DATABASES

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES)


def test_a_server_scheduled_to_a_host_not_mapped_yet_is_built_there(cells):
    # given hosts whose start-up casts are not handled yet: no mapping
    cloud = build_cloud(cells)
    try:
        HostMapping.objects.all().delete()
        member = cloud.member()
        # when a member boots a server
        sid = cloud.create_server(member, "early", networks="none")["id"]
        # then it goes ACTIVE on the host the scheduler chose, in that host's cell
        server = cloud.wait_for_status(member, sid, "ACTIVE")
        host = cloud.instance(sid).host
        assert "fault" not in server
        assert cloud.cell_of(sid) == cloud.hosts[host]["cell"]
        # and that host is mapped to its cell now, the others still not
        assert {m.host: m.cell.name for m in HostMapping.objects.select_related("cell")} == {
            host: cloud.hosts[host]["cell"]}
    finally:
        cloud.teardown()

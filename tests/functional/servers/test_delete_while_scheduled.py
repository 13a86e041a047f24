"""A delete that read the server as a build request, while the conductor placed it before the
delete reached the build request: the delete must find the server in its cell and delete it
there. It answered 204 and left the server to build (Tempest's clean-ups saw it ACTIVE for good)."""
from __future__ import annotations

from typing import Any

import pytest

import conductor.rpc
from cells.context import target_cell
from conductor.tasks import schedule_and_build_instances_task
from servers.models import BuildRequest, InstanceAction
from servers.services import delete
from tests.cloud import build_cloud
from tests.conftest import ALL_DATABASES

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES)


def _accepted(cloud: Any, client: Any, monkeypatch: Any) -> tuple[str, dict[str, Any]]:
    """A server accepted by the API whose conductor cast is held: (its id, the cast)."""
    casts: list[dict[str, Any]] = []
    with monkeypatch.context() as patch:
        patch.setattr(conductor.rpc, "schedule_and_build_instances",
                      lambda **kwargs: casts.append({**kwargs, "ctx": kwargs["ctx"].to_dict()}))
        sid = cloud.create_server(client, "raced", networks="none")["id"]
    (cast,) = casts
    return sid, cast


def test_a_server_placed_while_its_delete_ran_is_deleted_in_its_cell(cells, monkeypatch):
    cloud = build_cloud(cells)
    try:
        member = cloud.member()
        sid, cast = _accepted(cloud, member, monkeypatch)
        assert BuildRequest.objects.filter(instance_uuid=sid).exists()
        # given the conductor places the server after the delete read it as a build request
        real = delete._delete_build_request

        def conductor_first(instance_uuid: str) -> bool:
            schedule_and_build_instances_task.run(**cast)
            return real(instance_uuid)

        monkeypatch.setattr(delete, "_delete_build_request", conductor_first)
        # when the member deletes it
        assert cloud.delete(member, f"servers/{sid}").status_code == 204
        # then the server is gone, not left ACTIVE on its host
        assert not BuildRequest.objects.filter(instance_uuid=sid).exists()
        assert cloud.get(member, f"servers/{sid}").status_code == 404
        instance = cloud.instance(sid)
        assert instance.deleted and instance.vm_state == "deleted"
        with target_cell(cells[cloud.cell_of(sid)]):
            assert list(InstanceAction.objects.filter(instance_uuid=sid).order_by("id")
                        .values_list("action", flat=True)) == ["create", "delete"]
    finally:
        cloud.teardown()


def test_a_build_request_deleted_before_the_conductor_reads_it_builds_nothing(cells, monkeypatch):
    cloud = build_cloud(cells)
    try:
        member = cloud.member()
        sid, cast = _accepted(cloud, member, monkeypatch)
        assert cloud.delete(member, f"servers/{sid}").status_code == 204
        schedule_and_build_instances_task.run(**cast)
        assert cloud.get(member, f"servers/{sid}").status_code == 404
        assert cloud.cell_of(sid) is None
    finally:
        cloud.teardown()

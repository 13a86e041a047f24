"""Service-level tests of the server writes that used to live in views: update, metadata, tags.

Each service checks its policy rule at entry (a reader of the project is refused with
``PolicyNotAuthorized`` and nothing is written) and, allowed, writes the Instance or Tag rows
in the server's cell.
"""
from __future__ import annotations

from typing import Any

import pytest

from cells.context import target_cell
from cloudcore.core.context import RequestContext
from cloudcore.core.exceptions import InstanceIsLocked, PolicyNotAuthorized
from identity.services.tokens import context_for_token
from servers.models import BuildRequest, Instance, Tag
from servers.selectors import ServerRecord, server_get
from servers.services import metadata, tags, update
from tests.conftest import ALL_DATABASES

pytestmark = pytest.mark.django_db(databases=ALL_DATABASES)


def _actor(client: Any) -> RequestContext:
    return context_for_token(client.token)[1]


def _active_server(cloud: Any) -> tuple[RequestContext, RequestContext, str]:
    member = cloud.member()
    server = cloud.create_server(member, "vm1")
    cloud.wait_for_status(member, server["id"], "ACTIVE")
    reader = cloud.member("reader1", roles=("reader",))
    return _actor(member), _actor(reader), server["id"]


def _row(record: ServerRecord) -> Instance:
    with target_cell(record.cell):
        return Instance.objects.get(uuid=record.uuid)


def _tags(record: ServerRecord) -> list[str]:
    with target_cell(record.cell):
        return sorted(Tag.objects.filter(instance_uuid=record.uuid).values_list("tag", flat=True))


def test_server_update_writes_the_instance_row(cloud):
    # given an ACTIVE server of the member's project
    member, _, server_id = _active_server(cloud)
    # when the member renames it and sets a description
    record = update.server_update(actor=member, record=server_get(member, server_id), name="renamed",
                                  description="about")
    # then the Instance row in its cell holds the new values, and the returned record too
    row = _row(record)
    assert (row.display_name, row.display_description) == ("renamed", "about")
    assert record.instance is not None and record.instance.display_name == "renamed"
    assert cloud.notifications("instance.update")


def test_server_update_of_a_server_scheduled_meanwhile_writes_the_instance_row(cloud):
    # given a record read while the server was still a BuildRequest, whose row the conductor has
    # since deleted (the server was scheduled: its Instance row now lives in a cell)
    member, _, server_id = _active_server(cloud)
    live = server_get(member, server_id)
    stale = ServerRecord(uuid=server_id, build_request=BuildRequest(id=10**9, instance={"display_name": "vm1"},
                                                                      project_id=live.project_id))
    # when the member renames it through that record
    record = update.server_update(actor=member, record=stale, name="renamed-late")
    # then the change lands on the Instance row (no 500, nothing lost)
    assert _row(record).display_name == "renamed-late"


def test_server_update_refused_by_policy_writes_nothing(cloud):
    # given an ACTIVE server and a reader of its project
    _, reader, server_id = _active_server(cloud)
    record = server_get(reader, server_id)
    # when the reader renames it, then the policy refuses
    with pytest.raises(PolicyNotAuthorized, match="os_compute_api:servers:update"):
        update.server_update(actor=reader, record=record, name="renamed")
    assert _row(record).display_name == "vm1"


def test_metadata_services_merge_replace_and_delete(cloud):
    # given an ACTIVE server
    member, _, server_id = _active_server(cloud)
    # when metadata is merged, replaced, set per key and deleted per key
    get = lambda: server_get(member, server_id)  # noqa: E731  (a fresh record after each write)
    metadata.server_metadata_update(actor=member, record=get(), metadata={"a": "1"}, replace=False)
    metadata.server_metadata_update(actor=member, record=get(), metadata={"b": "2"}, replace=False)
    assert _row(get()).metadata == {"a": "1", "b": "2"}
    metadata.server_metadata_update(actor=member, record=get(), metadata={"c": "3"}, replace=True)
    metadata.server_metadata_item_set(actor=member, record=get(), key="d", value="4")
    metadata.server_metadata_item_delete(actor=member, record=get(), key="c")
    # then the row holds exactly what is left
    assert _row(get()).metadata == {"d": "4"}
    with pytest.raises(metadata.MetadataItemNotFound):
        metadata.server_metadata_item_delete(actor=member, record=get(), key="c")


def test_metadata_services_refused_by_policy(cloud):
    # given an ACTIVE server and a reader of its project
    _, reader, server_id = _active_server(cloud)
    record = server_get(reader, server_id)
    # when the reader writes metadata, then each rule refuses and nothing is written
    with pytest.raises(PolicyNotAuthorized, match="server-metadata:create"):
        metadata.server_metadata_update(actor=reader, record=record, metadata={"a": "1"}, replace=False)
    with pytest.raises(PolicyNotAuthorized, match="server-metadata:update_all"):
        metadata.server_metadata_update(actor=reader, record=record, metadata={"a": "1"}, replace=True)
    with pytest.raises(PolicyNotAuthorized, match="server-metadata:update"):
        metadata.server_metadata_item_set(actor=reader, record=record, key="a", value="1")
    with pytest.raises(PolicyNotAuthorized, match="server-metadata:delete"):
        metadata.server_metadata_item_delete(actor=reader, record=record, key="a")
    assert _row(record).metadata == {}


def test_metadata_limit_is_a_quota_error(cloud):
    # given a server of a project whose metadata_items quota is 1
    from servers.services.quotas import quota_set_update

    member, _, server_id = _active_server(cloud)
    quota_set_update(actor=RequestContext.system(), project_id=member.project_id, limits={"metadata_items": 1})
    # when two items are set, then the quota error (403) is raised
    with pytest.raises(metadata.MetadataLimitExceeded) as raised:
        metadata.server_metadata_update(actor=member, record=server_get(member, server_id),
                                        metadata={"a": "1", "b": "2"}, replace=True)
    assert raised.value.code == 403


def test_tag_services_add_replace_and_delete(cloud):
    # given an ACTIVE server
    member, _, server_id = _active_server(cloud)
    record = server_get(member, server_id)
    # when tags are added (twice the same), replaced and deleted
    assert tags.server_tag_add(actor=member, record=record, tag="x") is True
    assert tags.server_tag_add(actor=member, record=record, tag="x") is False
    assert _tags(record) == ["x"]
    assert tags.server_tags_replace(actor=member, record=record, tags=["b", "a", "b"]) == ["a", "b"]
    assert _tags(record) == ["a", "b"]
    tags.server_tag_delete(actor=member, record=record, tag="a")
    assert _tags(record) == ["b"]
    with pytest.raises(tags.TagNotFound):
        tags.server_tag_delete(actor=member, record=record, tag="a")
    tags.server_tags_delete_all(actor=member, record=record)
    # then no Tag row is left
    assert _tags(record) == []


def test_tag_services_refused_by_policy_and_lock(cloud):
    # given an ACTIVE server and a reader of its project
    member, reader, server_id = _active_server(cloud)
    record = server_get(reader, server_id)
    # when the reader adds a tag, then the policy refuses and nothing is written
    with pytest.raises(PolicyNotAuthorized, match="os-server-tags:update"):
        tags.server_tag_add(actor=reader, record=record, tag="x")
    with pytest.raises(PolicyNotAuthorized, match="os-server-tags:update_all"):
        tags.server_tags_replace(actor=reader, record=record, tags=["x"])
    assert _tags(record) == []
    # and a locked server refuses the member too (409)
    assert cloud.action(cloud.admin(), server_id, {"lock": None}).status_code == 202
    with pytest.raises(InstanceIsLocked):
        tags.server_tag_add(actor=member, record=server_get(member, server_id), tag="x")


def test_server_delete_checks_its_policy_at_the_service_entry(cloud):
    """Policy is the service's: a reader calling it directly (no view) is refused, the server stays."""
    from servers.services.delete import server_delete

    member = cloud.member()
    sid = cloud.create_server(member, "keep")["id"]
    owner_project = cloud.instance(sid).project_id
    reader = RequestContext(user_id="someone", project_id=owner_project, roles=["reader"])
    with pytest.raises(PolicyNotAuthorized):
        server_delete(actor=reader, record=server_get(reader, sid))
    assert cloud.show(member, sid)["status"] == "ACTIVE"

"""The rows ``POST /servers`` stores by plain INSERTs (``cloudcore.core.scope.insert_plain_now``: one
statement per table for all the servers asked for, made once per process) are those the ORM stored
before (``objects.create`` of each row; the requested security groups by ``bulk_create``'s upsert):
the same request, answered once each way, leaves the same columns in the four tables and the same
body."""
from __future__ import annotations

import itertools
import types
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connections

from cells.services import instance_mapping_create
from networks.models import InstanceSecurityGroups
from scheduling.services.request_specs import request_spec_create
from servers.services import create

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])

#: the tables a create writes, each with the column its rows are read in order of: the primary key
#: (SQLite's rowid is not PostgreSQL's)
TABLES = {"servers_buildrequest": "id", "scheduling_requestspec": "id", "cells_instancemapping": "id",
          "networks_instancesecuritygroups": "instance_uuid"}


class _Before:
    """The create service's writes as they were made before the plain INSERTs, each server's rows
    on their own: ``objects.create`` of its build request, ``request_spec_create``,
    ``instance_mapping_create`` and the upsert of its requested security groups."""

    @staticmethod
    def insert_plain_now(rows: list[Any], **_: Any) -> None:
        for row in rows:  # the build requests, made as objects.create made them
            row.save(force_insert=True)

    @staticmethod
    def request_specs_create(specs: dict[str, dict[str, Any]]) -> None:
        for instance_uuid, spec in specs.items():
            request_spec_create(instance_uuid=instance_uuid, spec=spec)

    @staticmethod
    def instance_mappings_create(*, instance_uuids: list[str], project_id: str, user_id: str | None) -> None:
        for instance_uuid in instance_uuids:
            instance_mapping_create(instance_uuid=instance_uuid, project_id=project_id, user_id=user_id)

    @staticmethod
    def instances_security_groups_request(instance_uuids: list[str], group_ids: list[str]) -> None:
        for instance_uuid in instance_uuids:
            InstanceSecurityGroups.objects.bulk_create(
                [InstanceSecurityGroups(instance_uuid=instance_uuid, security_group_ids=list(group_ids))],
                update_conflicts=True, unique_fields=["instance_uuid"], update_fields=["security_group_ids"])


def _stored() -> dict[str, list[dict[str, Any]]]:
    """Each table's rows as stored (the JSON columns' text included), without their ids; their
    timestamps only checked to be set (the same request made twice is stored at two moments)."""
    tables = {}
    with connections["default"].cursor() as cursor:
        for table, key in TABLES.items():
            cursor.execute(f'SELECT * FROM "{table}" ORDER BY "{key}"')  # noqa: S608 - names above
            names = [column[0] for column in cursor.description]
            rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
            for row in rows:
                row.pop("id", None)
                if "created_at" in row:
                    assert row.pop("created_at") is not None
            tables[table] = rows
    return tables


def _clear() -> None:
    with connections["default"].cursor() as cursor:
        for table in TABLES:
            cursor.execute(f'DELETE FROM "{table}"')  # noqa: S608 - names above


def _uuids() -> Iterator[uuid.UUID]:
    return (uuid.UUID(int=n, version=4) for n in itertools.count(1))


def test_create_stores_the_rows_the_orm_stored(cloud: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # given a request for two servers with most of what a body may carry, the ids and the time it
    # is accepted at the same each time it is made
    client = cloud.member()
    body = {"server": {
        "name": "rows", "flavorRef": "1", "imageRef": cloud.image_id, "networks": "none", "min_count": 2,
        "max_count": 2, "metadata": {"role": "web"}, "tags": ["a", "b"], "user_data": "aGVsbG8=",
        "description": "two", "adminPass": "secret", "accessIPv4": "192.0.2.1", "config_drive": True,
        "security_groups": [{"name": "default"}]},
        "os:scheduler_hints": {"custom": "value"}}
    now = create.timezone.now()

    def post() -> tuple[int, Any, dict[str, list[dict[str, Any]]], list[str]]:
        uuids = _uuids()
        monkeypatch.setattr(create, "uuidlib", types.SimpleNamespace(uuid4=lambda: next(uuids)))
        monkeypatch.setattr(create, "timezone", types.SimpleNamespace(now=lambda: now))
        statements: list[str] = []

        def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            statements.append(sql)
            return execute(sql, params, many, context)

        # (the build is cast on commit, and this test's transaction never commits: the rows stay as stored)
        with connections["default"].execute_wrapper(record):
            response = client.post("/compute/v2.1/servers", body, format="json",
                                   HTTP_OPENSTACK_API_VERSION="compute 2.90")
        inserts = [s for s in statements if s.startswith("INSERT") and s.split('"')[1] in TABLES]
        return response.status_code, response.json(), _stored(), inserts

    # when it is answered with the rows written as before
    with monkeypatch.context() as patched:
        for name in ("insert_plain_now", "request_specs_create", "instance_mappings_create",
                     "instances_security_groups_request"):
            patched.setattr(create, name, getattr(_Before, name))
        orm_status, orm_body, orm_rows, orm_inserts = post()
    _clear()
    # and again as it is now
    status, body_now, rows, inserts = post()
    # then both answered the same and stored the same rows, two of each table
    assert (status, body_now) == (orm_status, orm_body) and status == 202
    assert rows == orm_rows
    assert [len(rows[table]) for table in TABLES] == [2, 2, 2, 2]
    assert rows["cells_instancemapping"][0]["cell_id"] is None
    # in one INSERT per table, where the ORM made one per row
    assert [s.split(" (")[0] for s in inserts] == [f'INSERT INTO "{table}"' for table in TABLES]
    assert len(orm_inserts) == 8
    assert "ON CONFLICT" in inserts[-1]

"""The conductor's read of the build requests it is cast (``servers.selectors.build_requests_get``
with ``prepared``): the statement the ORM makes and the same rows (fields, JSON columns and the
request spec read with them), its SQL built once per process for each number of servers up to
``PREPARED_BUILD_REQUESTS_UP_TO`` and by the ORM beyond."""
from __future__ import annotations

from typing import Any

import pytest
from django.db import connections
from django.db.models import OuterRef

from cloudcore.core import prepared
from scheduling.services.request_specs import request_spec_of, request_specs_create
from servers import selectors
from servers.models import BuildRequest

pytestmark = pytest.mark.django_db


def _uuid(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


def _read(uuids: list[str], prepared_as: str | None) -> tuple[dict[str, Any], list[str]]:
    statements: list[str] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        statements.append(sql)
        return execute(sql, params, many, context)

    with connections["default"].execute_wrapper(record):
        found = selectors.build_requests_get(uuids, prepared=prepared_as,
                                             request_spec=request_spec_of(OuterRef("instance_uuid")))
    rows = {uuid: ({f.attname: getattr(br, f.attname) for f in BuildRequest._meta.concrete_fields}, br.request_spec)
            for uuid, br in found.items()}
    return rows, statements


@pytest.mark.parametrize("count", [1, 2, selectors.PREPARED_BUILD_REQUESTS_UP_TO + 1])
def test_the_prepared_read_is_the_orms(count: int) -> None:
    # given build requests, all but the last with a request spec, and a uuid with none
    uuids = [_uuid(n) for n in range(count)]
    for n, uuid in enumerate(uuids):
        BuildRequest.objects.create(instance_uuid=uuid, project_id="p", instance={"uuid": uuid, "n": n},
                                    block_device_mappings=[{"boot_index": 0}], tags=["t"])
    request_specs_create({uuid: {"instance_uuid": uuid, "flavor": {"vcpus": 1}} for uuid in uuids[:-1]})
    asked = [*uuids, _uuid(99)]
    # when they are read prepared, twice (the statement made, then reused), and by the ORM
    first, first_sql = _read(asked[:count], "test")
    again, again_sql = _read(asked[-count:], "test")
    orm, orm_sql = _read(asked[:count], None)
    orm_again, _ = _read(asked[-count:], None)
    # then the same rows and request specs, in one statement, the ORM's
    assert first == orm and again == orm_again
    assert first[uuids[0]][1] == ({"instance_uuid": uuids[0], "flavor": {"vcpus": 1}} if count > 1 else None)
    assert first[uuids[-1]][1] is None
    assert first_sql == again_sql == orm_sql and len(orm_sql) == 1
    key = f"servers.build_requests.test.{count}"
    assert (key in prepared._object_statements) == (count <= selectors.PREPARED_BUILD_REQUESTS_UP_TO)
    if count <= selectors.PREPARED_BUILD_REQUESTS_UP_TO:
        assert prepared._object_statements[key] is not None  # prepared, not left to the ORM

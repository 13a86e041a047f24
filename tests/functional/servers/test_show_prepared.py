"""A client's status poll (``GET /servers/{id}`` at 2.90, repeated every half second until the server
is ACTIVE: the request a web process serves most while servers boot) builds no SQL once a poll of
the same kind has been served: each of its statements is built once per process
(``cloudcore.core.prepared``), where building them (Django's compiler) cost more of the web's CPU
than running them. In each state a poll meets: accepted (not yet in a cell), placed in its cell and
building (no port yet: the groups it asked for), ACTIVE with a port, an IP and a tag.

Counts of Django's SQL compilations (the real compiler, counted), not timed assertions; the bodies are
the ORM's (``test_list_matches_show``: a show's body is every listed server's)."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db.models.sql.compiler import SQLCompiler

import compute.rpc
import conductor.rpc

pytestmark = pytest.mark.django_db(databases=["default", "cell0", "cell1", "cell2"])


@pytest.fixture
def compiled(monkeypatch: Any) -> Iterator[list[str]]:
    """The SQL Django's compiler builds while the test runs (each ``as_sql`` of a query)."""
    built: list[str] = []
    as_sql = SQLCompiler.as_sql

    def counted(self: SQLCompiler, *args: Any, **kwargs: Any) -> Any:
        sql, params = as_sql(self, *args, **kwargs)
        built.append(sql)
        return sql, params

    monkeypatch.setattr(SQLCompiler, "as_sql", counted)
    yield built


def _polls(cloud: Any, client: Any, first: str, second: str, built: list[str]) -> tuple[dict[str, Any], list[str]]:
    """The first server polled (the statements of its kind prepared), then the second: its body and
    the SQL built for it."""
    cloud.show(client, first, version="2.90")
    built.clear()
    body = cloud.show(client, second, version="2.90")
    return body, list(built)


def test_a_poll_of_an_active_server_builds_no_sql(cloud: Any, compiled: list[str]) -> None:
    # given two ACTIVE servers with a port on the demo network and a tag
    client = cloud.member()
    first, second = (cloud.create_server(client, name, networks="demo-net", tags=["polled"], version="2.90")["id"]
                     for name in ("one", "two"))
    # when the second is polled after the first
    body, built = _polls(cloud, client, first, second, compiled)
    # then its body has its port's address, groups and tag, and no statement was built for it
    assert body["status"] == "ACTIVE"
    assert [a["OS-EXT-IPS:type"] for a in body["addresses"]["demo-net"]] == ["fixed"]
    assert body["security_groups"] == [{"name": "default"}]
    assert body["tags"] == ["polled"]
    assert built == []


def test_a_poll_of_a_server_building_in_its_cell_builds_no_sql(cloud: Any, compiled: list[str],
                                                              monkeypatch: Any) -> None:
    # given two servers placed in a cell by the conductor, whose builds have not reached their host
    builds: list[str] = []
    monkeypatch.setattr(compute.rpc, "build_and_run_instance", lambda **kwargs: builds.append(kwargs["instance_uuid"]))
    client = cloud.member()
    first, second = (cloud.create_server(client, name, networks="none")["id"] for name in ("one", "two"))
    assert builds == [first, second]
    # when the second is polled after the first
    body, built = _polls(cloud, client, first, second, compiled)
    # then it is building with the groups it asked for (it has no port), and no statement was built
    assert (body["status"], body["OS-EXT-STS:vm_state"]) == ("BUILD", "building")
    assert body["security_groups"] == [{"name": "default"}]
    assert body["addresses"] == {}
    assert built == []


def test_a_poll_of_a_server_not_yet_in_a_cell_builds_no_sql(cloud: Any, compiled: list[str],
                                                           monkeypatch: Any) -> None:
    # given two accepted servers whose casts to the conductor have not been served
    casts: list[list[str]] = []
    monkeypatch.setattr(conductor.rpc, "schedule_and_build_instances",
                        lambda **kwargs: casts.append(kwargs["instance_uuids"]))
    client = cloud.member()
    first, second = (cloud.create_server(client, name, networks="none")["id"] for name in ("one", "two"))
    assert casts == [[first], [second]]
    # when the second is polled after the first
    body, built = _polls(cloud, client, first, second, compiled)
    # then it is building, and no statement was built for it
    assert (body["status"], body["OS-EXT-STS:vm_state"]) == ("BUILD", "building")
    assert built == []

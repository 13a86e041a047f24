"""Database URLs turned into connection settings: how long a connection is kept."""
from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from cells.dburl import database_config


def test_connections_are_closed_after_each_request_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLOUDCORE_DB_CONN_MAX_AGE", raising=False)
    assert database_config("sqlite:////tmp/cloudcore-x/api.sqlite3")["CONN_MAX_AGE"] == 0


def test_the_web_process_keeps_its_connections_when_told(monkeypatch: pytest.MonkeyPatch) -> None:
    # given: what run_cloud puts in the web process's environment
    monkeypatch.setenv("CLOUDCORE_DB_CONN_MAX_AGE", "300")
    # then: every database (API and cells, SQLite or PostgreSQL) keeps its connection that long
    assert database_config("sqlite:////tmp/cloudcore-x/cell1.sqlite3")["CONN_MAX_AGE"] == 300
    assert database_config("postgres://u:p@127.0.0.1:5432/cloudcore")["CONN_MAX_AGE"] == 300


def test_a_negative_age_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLOUDCORE_DB_CONN_MAX_AGE", "-1")
    with pytest.raises(ImproperlyConfigured, match="CLOUDCORE_DB_CONN_MAX_AGE"):
        database_config("sqlite:////tmp/cloudcore-x/api.sqlite3")


def test_a_postgresql_connection_names_its_process(monkeypatch: pytest.MonkeyPatch) -> None:
    # given: the name run_cloud gives a process it starts
    monkeypatch.setenv("CLOUDCORE_PROCESS_NAME", "compute2")
    # then: the server shows it in pg_stat_activity; SQLite has no such thing
    assert database_config("postgres://u@db/cell1")["OPTIONS"]["application_name"] == "cloudcore-compute2"
    assert "application_name" not in database_config("sqlite:////tmp/cloudcore-x/cell1.sqlite3")["OPTIONS"]
    # without it, the program's name
    monkeypatch.delenv("CLOUDCORE_PROCESS_NAME")
    monkeypatch.setattr("sys.argv", ["/srv/cloudcore/manage.py", "migrate"])
    assert database_config("postgres://u@db/cell1")["OPTIONS"]["application_name"] == "cloudcore-manage"


def test_prepared_statements_keep_their_first_plan_unless_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    # a startup parameter (no round trip); a URL's own options are kept before it
    options = database_config("postgres://u@db/cell1?options=-c%20statement_timeout%3D5000")["OPTIONS"]
    assert options["options"] == "-c statement_timeout=5000 -c plan_cache_mode=force_generic_plan"
    assert database_config("postgres://u@db/cell1")["SERVER_PREPARE"] is True
    monkeypatch.setenv("CLOUDCORE_DB_SERVER_PREPARE", "0")
    switched_off = database_config("postgres://u@db/cell1")
    assert "options" not in switched_off["OPTIONS"] and switched_off["SERVER_PREPARE"] is False

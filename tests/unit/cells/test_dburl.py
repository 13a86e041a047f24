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

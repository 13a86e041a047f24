"""Statements that PostgreSQL plans once per connection instead of at every execution.

psycopg2 sends each statement as text with its parameters in it, and PostgreSQL parses and plans
it every time. For the few statements every boot and status poll sends, the planning cost more of
the server's CPU than running them: 20 clients booting 100 servers (``bench/scenarios/live_load.py``,
``pg_stat_statements`` with ``track_planning``) spent 0.81 s planning and 0.53 s executing, the
cell's node-copy check alone (``hosts.selectors.compute_fingerprint_and_problems``: eleven indexed
figures and the services with a problem) 1.5 ms of planning per call.

``server_prepared(sql)`` marks such a statement (a ``str`` that says so). cloudcore's PostgreSQL
backend (``cloudcore.core.postgresql``) sends a marked statement as ``PREPARE`` the first time on
each connection (in the same round trip as its first ``EXECUTE``) and as ``EXECUTE`` with the
parameters after that; the server plans it once and keeps that plan for the connection
(``plan_cache_mode=force_generic_plan``, ``cells.dburl``). A split transaction's batched query
(``cloudcore.core.scope.SplitTransaction``) does the same for the marked statements in it. A
statement that may be sent again on a new connection (the first after a health check that only
looked at the socket) is prepared on the new one; a batched query is then sent as text. Other
backends (SQLite, Django's PostgreSQL backend) send it as it is.

Only for statements whose parameters are plain values (no tuple, list or dict to expand) and whose
text is the same from call to call: the connection keeps one prepared statement per text and set
of parameter types. ``CLOUDCORE_DB_SERVER_PREPARE=0`` turns it off (a pooler in transaction mode,
such as PgBouncer's, does not keep a session's prepared statements).
"""
from __future__ import annotations


class ServerPrepared(str):
    """SQL to be prepared by the server once per connection (see the module doc)."""

    __slots__ = ()


def server_prepared(sql: str) -> str:
    """``sql`` marked to be prepared on the server (PostgreSQL), unchanged for the others."""
    return ServerPrepared(sql)

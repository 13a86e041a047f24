"""The request scope: what one outermost API request may remember while it runs.

``RequestScopeMiddleware`` opens a scope around each HTTP request that is not already inside one.
A request made from within another in the same thread (the compute's in-process calls to the
image and network APIs, eager tasks run inside ``POST /servers``) joins the outer request's scope,
so a read memoised there (``memoized``) is done once for the whole request.

Rows handed to ``insert`` (records nobody reads while the request runs: the notifications kept
for the console, the scheduler's traces) are written when the outermost scope ends, every model's
rows in one INSERT and every database's rows in one transaction: one commit for all, instead of
one per row. Their order and their timestamps (set when each row was made) are what they would
have been written one by one. When that transaction fails, each model's rows are tried again
alone, so that one failing write does not take the others with it; nothing is raised to the
request. A reader that may run inside the same scope calls ``flush(model)`` first.

A model's rows may be written by a plain INSERT (``insert(..., plain=True)``, ``insert_plain``):
one statement made from the rows' field values, without the ORM's ``bulk_create`` (which costs
more than the statement for one small row), optionally skipping the rows whose key is already
stored (``ignore_conflicts``) or updating them (``update_fields``). The rows get no primary key back.
Such rows may also be given as mappings of field values (``insert_values``) instead of model
instances, whose construction costs more than the INSERT of a small row. On SQLite, with nothing
watching the connection's statements (no ``execute_wrapper``, no query log), the statement is run on
the DB-API connection itself, inside Django's error wrapper: Django's cursor (made per statement,
its wrappers and parameter conversion) cost more than SQLite's work for one small row.
``insert_plain_now`` writes such a statement at once, in the caller's transaction: for rows that
must be stored with the caller's other writes (a server's build rows), not at the scope's end.

``written_together`` is the transaction of such rows: ``transaction.atomic``, but on PostgreSQL,
outside a transaction, the plain INSERTs made in it are queued and sent on exit as one query, which
PostgreSQL runs as one transaction: one round trip to the server where the ORM's transaction made
one for its ``BEGIN`` (psycopg2 sends its own), one per INSERT and one for its ``COMMIT``. A
statement of any other kind made in it first opens the transaction (``transaction.atomic``) and
sends what is queued, so that it runs after those rows and in their transaction, as before.
``split_transaction`` is, on PostgreSQL, a transaction that reads, decides in Python and then
writes, in two queries: ``BEGIN`` sent with its first statements, ``COMMIT`` with its last.

A scope is opened by the HTTP middleware, by the conductor's build around its scheduling call and
a failed build's burial (``conductor.build``), and by ``scheduling.scheduler.select_destinations``
(which joins the scope open around it, and in a Celery worker otherwise ends when it returns).
``atomic_with_deferred`` is a transaction that writes the scope's deferred rows of its database
as its first statements (and those deferred inside it at its end): committed with the block's
writes, by its one commit (a failed build's burial: the scheduling's trace with the server's
mapping pointed at cell0).

Outside a scope (tests calling services, Celery tasks outside the scheduler, commands) nothing is
memoised and deferred work runs at once: the scope only saves repeated reads and writes, it never changes what
is read or written.

The writes of the threads of one process are committed as a group (``_GroupCommit``): a thread
whose rows are to be written now (``insert`` outside a scope, not inside a transaction; a scope's
rows when it ends) queues them and waits; the first of the waiting threads writes every queued
row in one transaction (one INSERT per model; rows that are one plain INSERT, the statement alone
in autocommit) while the others wait for its commit, and the rows queued meanwhile go in the next
one. Each thread returns only once its own rows are committed, as if it had written them alone:
a Celery task that returned (and was acknowledged) has its rows in the database, and a process
that dies before has acknowledged nothing of them. Under load (the conductor's threads storing the
notifications of the compute hosts, one task each) this is one write transaction for many rows
instead of one each; alone, a thread writes at once. When a
group's transaction fails, each thread writes its own rows again alone, so that a failure is its
own thread's (raised to the caller of ``insert``, logged for a scope) and does not take the others'
rows with it.
"""
from __future__ import annotations

import contextlib
import datetime
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any, TypeVar

from django.db import DEFAULT_DB_ALIAS, connections, models, router, transaction
from django.db.models.constants import OnConflict

from .jsontext import EncodedJSON, TextEncoder

log = logging.getLogger(__name__)
T = TypeVar("T")


class Scope:
    def __init__(self) -> None:
        self.memo: dict[Any, Any] = {}
        #: rows to insert at the end, by model (in the order the models were first deferred)
        self.rows: dict[type[models.Model], list[models.Model]] = {}
        #: per model, what to do once its rows are written (e.g. prune old ones)
        self.then: dict[type[models.Model], Callable[[list[models.Model]], None]] = {}
        #: the models whose rows are written by ``insert_plain`` (the value: ``ignore_conflicts``)
        self.plain: dict[type[models.Model], bool] = {}


_current: ContextVar[Scope | None] = ContextVar("cloudcore_request_scope", default=None)


def current() -> Scope | None:
    return _current.get()


@contextlib.contextmanager
def request_scope() -> Iterator[Scope]:
    """Open a scope, or join the one already open in this context."""
    outer = _current.get()
    if outer is not None:
        yield outer
        return
    scope = Scope()
    token = _current.set(scope)
    try:
        yield scope
    finally:
        _current.reset(token)
        try:
            _write_deferred(scope.rows, scope.then, scope.plain)
        except Exception:  # nor hide what the request raised
            log.exception("request scope: deferred rows failed")


def memoized(key: Any, read: Callable[[], T]) -> T:
    """``read()`` once per scope under ``key`` (every time outside a scope)."""
    scope = _current.get()
    if scope is None:
        return read()
    if key not in scope.memo:
        scope.memo[key] = read()
    return scope.memo[key]  # type: ignore[no-any-return]


def remember(key: Any, value: Any) -> None:
    """Memoise ``value`` under ``key`` (what a write just stored; nothing outside a scope)."""
    scope = _current.get()
    if scope is not None:
        scope.memo[key] = value


def forget(key: Any) -> None:
    """Drop a memoised read of the current scope (after a write that changes it)."""
    scope = _current.get()
    if scope is not None:
        scope.memo.pop(key, None)


Row = TypeVar("Row", bound=models.Model)


def insert(rows: list[Row], *, then: Callable[[list[Row]], None] | None = None, plain: bool = False,
           ignore_conflicts: bool = False) -> None:
    """Insert ``rows`` (all of one model) with the other rows deferred in this scope when it
    ends, or at once outside a scope; ``then(rows)`` runs once they are written (after the
    transaction, its failure logged). A failure outside a scope is raised to the caller.
    ``plain``: by ``insert_plain`` (with ``ignore_conflicts``), the same for every row of the
    model in the scope."""
    if rows:
        _insert(type(rows[0]), rows, then, plain, ignore_conflicts)


def insert_values(model: type[models.Model], rows: list[dict[str, Any]], *, ignore_conflicts: bool = False,
                  then: Callable[[list[dict[str, Any]]], None] | None = None) -> None:
    """``insert(..., plain=True)`` of rows given as mappings ``{attname: value}`` of ``model``'s
    fields (a field left out takes its default; no ``pre_save``, so not for a model with
    ``auto_now`` fields), which cost less to make than model instances; ``then`` as ``insert``'s."""
    if rows:
        _insert(model, rows, then, True, ignore_conflicts)


def _insert(model: type[models.Model], rows: list[Any], then: Callable[[list[Any]], None] | None, plain: bool,
            ignore_conflicts: bool) -> None:
    scope = _current.get()
    if scope is None:
        database = router.db_for_write(model)
        in_transaction = transaction.get_connection(database).in_atomic_block  # part of the caller's
        if in_transaction:
            _write_own(database, model, rows, plain, ignore_conflicts)
        elif not _group.write(database, [(model, rows)], {model: ignore_conflicts} if plain else None):
            with _group.in_turn:  # the group failed: written alone, its failure raised here
                _write_own(database, model, rows, plain, ignore_conflicts)
        if then is not None:
            then(rows)
        return
    scope.rows.setdefault(model, []).extend(rows)
    if then is not None:
        scope.then[model] = then
    if plain:
        scope.plain[model] = ignore_conflicts


def flush(*models_: type[models.Model]) -> None:
    """Write now the rows of ``models_`` deferred in this scope, in one transaction (a reader of
    them inside the scope calls it first)."""
    scope = _current.get()
    if scope is None:
        return
    rows = {model: scope.rows.pop(model) for model in models_ if scope.rows.get(model)}
    if rows:
        then = {model: scope.then.pop(model) for model in rows if model in scope.then}
        _write_deferred(rows, then, scope.plain)


def flush_database(database: str) -> None:
    """Write now the rows deferred in this scope whose model lives in ``database``: inside a
    transaction open on it, in that transaction (committed with the caller's writes, a failure
    of theirs rolled back to a savepoint and logged, as at the scope's end), else in one of
    their own."""
    scope = _current.get()
    if scope is not None:
        flush(*_deferred_for(scope, database))


def _deferred_for(scope: Scope, database: str) -> list[type[models.Model]]:
    """The models of which ``scope`` holds deferred rows that live in ``database``."""
    return [model for model, rows in scope.rows.items() if rows and router.db_for_write(model) == database]


@contextlib.contextmanager
def atomic_with_deferred(database: str) -> Iterator[None]:
    """``transaction.atomic`` on ``database`` that also writes the rows deferred in this scope for
    ``database``: those deferred before the block are its first statements (one INSERT per model,
    no savepoint: it costs more than a small row's INSERT), those deferred inside it are written at
    its end (``flush_database``); all are committed with the block's writes, by its one commit.
    When the first rows fail, the transaction is rolled back before the block has written
    anything, the rows go back to the scope (written when it ends, each model's alone if they fail
    again, logged) and the block runs in a new transaction: a failure of theirs never fails the
    block. When the block raises, they go back to the scope too (written when it ends). Inside a
    transaction on ``database`` already, or outside a scope: ``transaction.atomic`` and
    ``flush_database`` at its end."""
    scope = _current.get()
    models_ = [] if scope is None or transaction.get_connection(database).in_atomic_block else \
        _deferred_for(scope, database)
    if scope is None or not models_:
        with transaction.atomic(using=database):
            yield
            flush_database(database)
        return
    groups = [(model, scope.rows.pop(model)) for model in models_]
    then = {model: scope.then.pop(model) for model in models_ if model in scope.then}
    restores = [_unsaved(model_rows) for _model, model_rows in groups]

    def give_back() -> None:  # the rows rolled back: to the scope again, unsaved
        for restore in restores:
            restore()
        for model, model_rows in groups:
            scope.rows[model] = [*model_rows, *scope.rows.get(model, [])]
            if model in then:
                scope.then.setdefault(model, then[model])

    block = transaction.atomic(using=database)
    block.__enter__()
    try:
        for model, model_rows in groups:
            _write_model(database, model, model_rows, scope.plain)
    except Exception as exc:
        log.warning("request scope: the deferred rows could not open the transaction; written at the scope's end",
                    exc_info=True)
        block.__exit__(type(exc), exc, exc.__traceback__)  # rolled back
        give_back()
        groups = []
        block = transaction.atomic(using=database)
        block.__enter__()
    try:
        yield
        flush_database(database)
    except BaseException as exc:
        block.__exit__(type(exc), exc, exc.__traceback__)  # rolled back
        give_back()  # written when the scope ends, as if the block had not taken them
        raise
    else:
        block.__exit__(None, None, None)
    _after_written(groups, then)


def _write_rows(model: type[Row], rows: list[Row]) -> None:
    """One INSERT of ``rows``: a lone row saved, not wrapped in ``bulk_create``'s transaction
    (outside a transaction it commits by itself)."""
    if len(rows) == 1:
        rows[0].save(force_insert=True)
    else:
        model._default_manager.bulk_create(rows)


#: rows per plain INSERT statement (below every backend's limit of parameters)
PLAIN_BATCH = 100


class _PlainStatement:
    def __init__(self, fields: list[Any], preparers: list[Callable[[Any, Any], Any]], sql: str, names: list[str],
                 native: str | None) -> None:
        self.fields, self.preparers, self.sql, self.names, self.native = fields, preparers, sql, names, native
        #: (attname, field, preparer) of each field written, for rows given by their values
        self.named = [(field.attname, field, prepare) for field, prepare in zip(fields, preparers, strict=True)]


#: (backend, model, rows, ignore_conflicts, unique_fields, update_fields, returning) -> the fields written, how
#: each value is prepared, the INSERT statement for Django's cursor (its parameters named) and the
#: names of its parameters, and the statement for the DB-API connection (SQLite's ``?``): made once
#: per process
_plain_statements: dict[tuple[str, type[models.Model], int, bool, tuple[str, ...], tuple[str, ...], bool],
                        _PlainStatement] = {}


def _preparer(field: Any, connection: Any) -> Callable[[Any, Any], Any]:
    """How a value of ``field`` is made ready for a connection of ``connection``'s backend
    (``prepare(value, connection)``): ``get_db_prep_save``, but a string of a text field as it is,
    and an aware datetime of a datetime field by the backend's adaptation alone, on SQLite a UTC
    time for a UTC connection by the text that adaptation makes of it (what ``get_db_prep_save``
    comes to for those values, by fewer calls: a trace record's time cost more than its other six
    values together), and an ``EncodedJSON`` of a JSON field (no encoder of its own) by its text,
    not encoded again."""
    full = type(field).get_db_prep_save
    kind = field.get_internal_type()
    if kind in ("CharField", "TextField") and full is models.Field.get_db_prep_save \
            and type(field).get_prep_value in (models.CharField.get_prep_value, models.TextField.get_prep_value):
        return lambda value, connection: value if type(value) is str else field.get_db_prep_save(value, connection)
    if kind == "DateTimeField" and type(field).get_db_prep_value is models.DateTimeField.get_db_prep_value \
            and type(field).get_prep_value is models.DateTimeField.get_prep_value:
        sqlite = connection.vendor == "sqlite"

        def datetime_value(value: Any, connection: Any) -> Any:
            if type(value) is datetime.datetime and value.utcoffset() is not None:
                if sqlite and value.tzinfo is datetime.UTC and connection.timezone is datetime.UTC:
                    # SQLite's adaptation of a UTC time for a UTC connection (make_naive, then str)
                    return str(value.replace(tzinfo=None))
                return connection.ops.adapt_datetimefield_value(value)
            return field.get_db_prep_save(value, connection)
        return datetime_value
    if kind == "JSONField" and field.encoder is None \
            and type(field).get_db_prep_save is models.JSONField.get_db_prep_save:
        def json_value(value: Any, connection: Any) -> Any:
            if type(value) is EncodedJSON:  # its text, made once (cloudcore.core.jsontext)
                return connection.ops.adapt_json_value(value, TextEncoder)
            return field.get_db_prep_save(value, connection)
        return json_value
    return field.get_db_prep_save  # type: ignore[no-any-return]


def _plain_statement(connection: Any, model: type[models.Model], count: int, ignore_conflicts: bool,
                     unique_fields: tuple[str, ...] = (), update_fields: tuple[str, ...] = (),
                     returning: bool = False) -> _PlainStatement:
    """The INSERT statement of ``count`` rows of ``model`` (see ``insert_plain``), its parameters
    named (``%(p0)s``) for Django's cursor: with a mapping of parameters Django's SQLite backend
    names them by one string formatting, where positional ones (``%s``) are found by a regular
    expression over the statement, which cost more than the rest of a small row's INSERT. On
    SQLite also the statement for the DB-API connection, its parameters ``?``. ``returning``: the
    statement gives back the rows' auto primary keys, in the rows' order (``RETURNING``)."""
    key = (connection.vendor, model, count, ignore_conflicts, unique_fields, update_fields, returning)
    found = _plain_statements.get(key)
    if found is None:
        opts = model._meta
        fields = [f for f in opts.concrete_fields if f is not opts.auto_field]
        quote = connection.ops.quote_name
        names = [f"p{i}" for i in range(count * len(fields))]
        columns = ", ".join(quote(f.column) for f in fields)
        table = quote(opts.db_table)
        marks = ", ".join("(" + ", ".join(f"%({name})s" for name in names[start:start + len(fields)]) + ")"
                          for start in range(0, len(names), len(fields)))
        conflicts = ""
        if update_fields:  # the clause the ORM's bulk_create(update_conflicts=True) writes
            column = {f.name: f.column for f in fields}
            conflicts = " " + connection.ops.on_conflict_suffix_sql(
                fields, OnConflict.UPDATE, [column[name] for name in update_fields],
                [column[name] for name in unique_fields])
        elif ignore_conflicts:
            conflicts = " ON CONFLICT DO NOTHING"
        if returning:
            conflicts += f" RETURNING {quote(opts.auto_field.column)}"  # type: ignore[union-attr]
        # names from the model; a ``%`` in them doubled for Django's cursor, which formats the statement
        sql = (f"INSERT INTO {table.replace('%', '%%')} ({columns.replace('%', '%%')}) VALUES {marks}"  # noqa: S608
               f"{conflicts.replace('%', '%%')}")
        native = None
        if connection.vendor == "sqlite":
            row = "(" + ", ".join("?" * len(fields)) + ")"
            native = f"INSERT INTO {table} ({columns}) VALUES {', '.join([row] * count)}{conflicts}"  # noqa: S608
        found = _PlainStatement(fields, [_preparer(f, connection) for f in fields], sql, names, native)
        _plain_statements[key] = found
    return found


def _plain_values(statement: _PlainStatement, rows: list[Any], connection: Any) -> list[Any]:
    """The parameters of ``rows`` (model instances: each field's ``pre_save``; mappings: their
    values, a field left out its default), in the statement's order."""
    values: list[Any] = []
    pairs = list(zip(statement.fields, statement.preparers, strict=True))
    for row in rows:
        if isinstance(row, dict):
            values.extend([prepare(row[name], connection) if name in row else prepare(field.get_default(), connection)
                           for name, field, prepare in statement.named])
        else:
            values.extend(prepare(field.pre_save(row, True), connection) for field, prepare in pairs)
    return values


class _Together:
    """The plain INSERTs queued in a ``written_together`` block on PostgreSQL, and whether the
    block's transaction has been opened (a statement of another kind was made in it). An INSERT
    that gives its rows' primary keys back (``RETURNING``) may only be the last one queued: a
    query answers with its last statement's rows alone."""

    def __init__(self, database: str, stack: contextlib.ExitStack) -> None:
        self.database = database
        self.stack = stack
        #: (statement, parameters, the rows to give the keys it returns, if it returns them)
        self.queued: list[tuple[str, dict[str, Any], list[models.Model] | None]] = []
        self.sending = False
        self.in_transaction = False

    def open(self) -> None:
        """Open the block's transaction and send what is queued in it (before a statement that
        cannot be queued after those)."""
        self.stack.enter_context(transaction.atomic(using=self.database))
        self.in_transaction = True
        self.send()

    def send(self) -> None:
        """The queued statements, in the order they were made, as one query (their parameters
        bound by psycopg2's ``mogrify``, as its ``execute`` binds them); the last one's rows given
        the primary keys it returns."""
        if not self.queued:
            return
        queued, self.queued = self.queued, []
        self.sending = True
        try:
            with connections[self.database].cursor() as cursor:
                cursor.execute(b"; ".join(cursor.mogrify(sql, params) for sql, params, _rows in queued).decode())
                if queued[-1][2] is not None:
                    _give_keys(self.database, queued[-1][2], cursor.fetchall())
        finally:
            self.sending = False


def _give_keys(database: str, rows: list[models.Model], keys: Sequence[Sequence[Any]]) -> None:
    """Each of ``rows`` its primary key, from the ``RETURNING`` rows of its INSERT (in order), and
    its saved state, as ``bulk_create`` leaves them."""
    for row, (key,) in zip(rows, keys, strict=True):
        row.pk = key
        row._state.adding = False
        row._state.db = database


_together: ContextVar[_Together | None] = ContextVar("cloudcore_written_together", default=None)


@contextlib.contextmanager
def written_together(using: str = DEFAULT_DB_ALIAS) -> Iterator[None]:
    """A transaction on ``using`` for rows written by ``insert_plain`` (``insert_plain_now``):
    ``transaction.atomic(using=using)``, but on PostgreSQL, when no transaction is open, their
    INSERTs are queued and sent on exit as one query, which the server runs as one transaction
    (all the rows or, on an error, none; the error raised here). Before any other statement made on
    ``using`` inside the block, the block's transaction is opened and what is queued is sent: that
    statement runs after those rows, in their transaction, and the block commits on exit as
    ``atomic`` does. A ``transaction.on_commit`` callback belongs after the block: inside it, with
    no transaction open yet, Django would run it at once. Nothing is queued when the block is
    entered inside another transaction (then it is ``atomic``'s savepoint) or another such block."""
    connection = connections[using]
    if connection.vendor != "postgresql" or connection.in_atomic_block or _together.get() is not None \
            or not connection.get_autocommit():  # (a transaction managed by hand: its own)
        with transaction.atomic(using=using):
            yield
        return
    with contextlib.ExitStack() as stack:
        together = _Together(using, stack)
        token = _together.set(together)
        try:
            def before_other_statements(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
                if not together.sending and not together.in_transaction:
                    together.open()
                return execute(sql, params, many, context)

            with connection.execute_wrapper(before_other_statements):
                yield
                together.send()
        finally:
            _together.reset(token)


def insert_plain(database: str, model: type[Row], rows: list[Any], *, ignore_conflicts: bool = False,
                 unique_fields: Sequence[str] = (), update_fields: Sequence[str] = (), returning: bool = False
                 ) -> None:
    """``rows`` of ``model`` (instances, or mappings of field values as ``insert_values`` takes
    them) in one INSERT statement (per ``PLAIN_BATCH`` rows) on ``database``: every concrete field
    but an auto primary key, as ``save`` would prepare it; with ``ignore_conflicts`` a row whose
    unique key is stored already is skipped (``ON CONFLICT DO NOTHING``, SQLite and PostgreSQL
    alike); with ``update_fields`` such a row's stored ``update_fields`` take the new row's values
    instead (``ON CONFLICT (unique_fields) DO UPDATE``, as ``bulk_create(update_conflicts=True)``).
    The rows are not given their primary keys. On SQLite, when no ``execute_wrapper`` or query log
    watches the connection, run on the DB-API connection (Django's errors still raised, a broken
    transaction still refused). Inside ``written_together`` on PostgreSQL, queued until the block
    ends or another statement is made in it. ``returning`` (model instances of a model with an auto
    primary key, no conflict clause): the rows are given their primary keys, as ``bulk_create``
    gives them (``RETURNING``; queued last in a ``written_together`` block, sent with what is
    queued)."""
    connection = connections[database]
    conflicts = tuple(unique_fields), tuple(update_fields)
    direct = connection.vendor == "sqlite" and not connection.execute_wrappers and not connection.queries_logged
    together = _together.get()
    for start in range(0, len(rows), PLAIN_BATCH):
        batch = rows[start:start + PLAIN_BATCH]
        statement = _plain_statement(connection, model, len(batch), ignore_conflicts, *conflicts, returning)
        values = _plain_values(statement, batch, connection)
        if together is not None and together.database == database and not together.in_transaction \
                and together.queued and together.queued[-1][2] is not None:
            together.open()  # the keys of the statement queued last are its query's answer
        if together is not None and together.database == database and not together.in_transaction:
            together.queued.append((statement.sql, dict(zip(statement.names, values, strict=True)),
                                    batch if returning else None))
        elif direct and statement.native is not None:
            connection.ensure_connection()
            connection.validate_no_broken_transaction()
            with connection.wrap_database_errors:
                answered = connection.connection.execute(statement.native, values)
                if returning:
                    _give_keys(database, batch, answered.fetchall())
        else:
            with connection.cursor() as cursor:
                cursor.execute(statement.sql, dict(zip(statement.names, values, strict=True)))
                if returning:
                    _give_keys(database, batch, cursor.fetchall())


def insert_plain_now(rows: list[Row], *, unique_fields: Sequence[str] = (), update_fields: Sequence[str] = (),
                     returning: bool = False) -> None:
    """``rows`` (all of one model) by ``insert_plain`` at once, on the database the router chooses for
    their model, in the caller's transaction when one is open: for rows that must be written with
    the caller's other writes (a server's build rows), which ``insert`` would defer to the scope's
    end. What ``Model.objects.create`` (or ``bulk_create``) would store, in one statement for all
    the rows, without the ORM building it each time; the rows get no primary key back but with
    ``returning`` (``insert_plain``'s: inside ``written_together`` on PostgreSQL, once the block's
    query is sent)."""
    if rows:
        model = type(rows[0])
        insert_plain(router.db_for_write(model), model, rows, unique_fields=unique_fields,
                     update_fields=update_fields, returning=returning)


class SplitTransaction:
    """A transaction on PostgreSQL sent as two queries (``split_transaction``): ``first`` sends
    ``BEGIN`` with its statements, ``last`` its statements with ``COMMIT``."""

    def __init__(self, database: str) -> None:
        self.database = database
        self.state = "new"  # "open" once ``first`` is sent, "done" once ``last`` is

    def _send(self, statements: Sequence[tuple[str, Any]]) -> list[tuple[Any, ...]]:
        """``statements`` as one query; those marked ``server_prepared`` as the connection's
        prepared statements (``cloudcore.core.postgresql``), known as prepared once it ran. Not
        when the query may be sent again on a new connection (the first after a health check
        that only looked at the socket: ``unconfirmed``), which has none of the old one's."""
        from cloudcore.core.postgresql.base import server_prepares

        connection = connections[self.database]
        prepared = []
        with connection.cursor() as cursor:
            texts = []
            prepare = None if getattr(connection, "unconfirmed", False) else \
                getattr(connection, "prepared_statement", None)
            for sql, params in statements:
                if prepare is not None and server_prepares(connection, sql, params):
                    sql, done = prepare(sql, params)
                    prepared.append(done)
                texts.append(cursor.mogrify(sql, params))
            cursor.execute(b"; ".join(texts).decode())
            rows = cursor.fetchall() if cursor.description is not None else []
        for done in prepared:
            done()
        return rows

    def first(self, statements: Sequence[tuple[str, Any]]) -> list[tuple[Any, ...]]:
        """``BEGIN`` and ``statements`` (each ``(sql, params)``) in one query; the last one's rows."""
        assert self.state == "new"
        self.state = "open"
        return self._send([("BEGIN", None), *statements])

    def last(self, statements: Sequence[tuple[str, Any]]) -> None:
        """``statements`` and ``COMMIT`` in one query (an error raised, the transaction rolled back)."""
        assert self.state == "open"
        self._send([*statements, ("COMMIT", None)])
        self.state = "done"


@contextlib.contextmanager
def split_transaction(using: str = DEFAULT_DB_ALIAS) -> Iterator[SplitTransaction | None]:
    """One transaction on ``using`` in two round trips where the ORM's makes one per statement
    plus its ``BEGIN`` (psycopg2 sends its own) and its ``COMMIT``: for a transaction that reads,
    decides in Python, then writes (``SplitTransaction.first`` then ``.last``). On PostgreSQL, in
    autocommit (no transaction open, no ``written_together`` block), the connection stays in
    autocommit while the server holds the transaction the queries open and close: nothing else
    may be sent on ``using`` in between. Each statement of a query is run as if sent alone (in
    READ COMMITTED, with a snapshot of its own taken when it starts: a read after a lock sees
    what the lock's holder committed). Leaving the block without ``last`` (an exception, or
    nothing to write) rolls back; a connection that cannot roll back is closed, so that nothing
    runs in the transaction left behind. None (nothing opened) elsewhere: the caller uses
    ``transaction.atomic``."""
    connection = connections[using]
    if connection.vendor != "postgresql" or connection.in_atomic_block or _together.get() is not None \
            or not connection.get_autocommit():
        yield None
        return
    split = SplitTransaction(using)
    try:
        yield split
    finally:
        if split.state == "open":
            try:
                with connection.cursor() as cursor:
                    cursor.execute("ROLLBACK")
            except Exception:  # the connection is broken: nothing runs in its transaction any more
                log.exception("split transaction: could not roll back; closing the connection")
                connection.close()


def plain_insert_statement(rows: list[Row]) -> tuple[str, dict[str, Any]]:
    """The statement and parameters ``insert_plain_now(rows)`` sends (up to ``PLAIN_BATCH`` rows of
    one model), to be sent with others (``SplitTransaction.last``)."""
    model = type(rows[0])
    connection = connections[router.db_for_write(model)]
    assert len(rows) <= PLAIN_BATCH
    statement = _plain_statement(connection, model, len(rows), False)
    return statement.sql, dict(zip(statement.names, _plain_values(statement, rows, connection), strict=True))


def _write_own(database: str, model: type[models.Model], rows: list[Any], plain: bool, ignore_conflicts: bool) -> None:
    if plain:
        _write_model(database, model, rows, {model: ignore_conflicts})
    else:
        _write_rows(model, rows)


def _write_deferred(rows: dict[type[models.Model], list[models.Model]],
                    then: dict[type[models.Model], Callable[[list[models.Model]], None]],
                    plain: dict[type[models.Model], bool] | None = None) -> None:
    """Every database's deferred rows in one transaction; ``then`` of each model written."""
    by_database: dict[str, list[tuple[type[models.Model], list[models.Model]]]] = {}
    for model, model_rows in rows.items():
        if model_rows:
            by_database.setdefault(router.db_for_write(model), []).append((model, model_rows))
    for database, groups in by_database.items():
        in_transaction = transaction.get_connection(database).in_atomic_block
        if in_transaction:
            groups = write_together(database, groups, plain)
        elif not _group.write(database, groups, plain):
            with _group.in_turn:  # the group failed: each thread writes its own
                groups = write_together(database, groups, plain)
        _after_written(groups, then)


def _after_written(groups: Sequence[tuple[type[models.Model], list[Any]]],
                   then: dict[type[models.Model], Callable[[list[Any]], None]]) -> None:
    """``then`` of each model whose rows (``groups``) were written (its failure logged)."""
    for model, model_rows in groups:
        if model in then:
            try:
                then[model](model_rows)
            except Exception:  # e.g. pruning: the rows are written
                log.exception("request scope: after writing %s rows", model.__name__)


def _write_model(database: str, model: type[Row], rows: list[Row], plain: dict[type[models.Model], bool]) -> None:
    """One INSERT of ``rows`` on ``database``: ``insert_plain`` for a model in ``plain`` (its value:
    ``ignore_conflicts``), model instances given their primary keys back as ``bulk_create`` gives
    them (``_returns_keys``), else the ORM's ``bulk_create``."""
    if model in plain:
        insert_plain(database, model, rows, ignore_conflicts=plain[model],
                     returning=_returns_keys(model, rows, plain))
    else:
        model._default_manager.bulk_create(rows)


def _returns_keys(model: type[models.Model], rows: Sequence[Any], plain: dict[type[models.Model], bool]) -> bool:
    """Whether the plain INSERT of ``rows`` gives them their primary keys back: model instances (not
    mappings of values) of a model with an auto primary key, no row skipped on a conflict (e.g.
    the notifications, whose pruning counts by their ids)."""
    return (model in plain and not plain[model] and model._meta.auto_field is not None
            and bool(rows) and isinstance(rows[0], models.Model))


def _unsaved(rows: Sequence[models.Model]) -> Callable[[], None]:
    """Which of ``rows`` have no primary key yet; the callable gives those their unsaved state
    back after a rolled-back transaction (the ids it gave them are not theirs)."""
    fresh = [row for row in rows if isinstance(row, models.Model) and row.pk is None]

    def restore() -> None:
        for row in fresh:
            row.pk = None
            row._state.adding = True
    return restore


def write_together(database: str, groups: list[tuple[type[Row], list[Row]]],
                   plain: dict[type[models.Model], bool] | None = None) -> list[tuple[type[Row], list[Row]]]:
    """Insert each model's rows (one INSERT per model; ``insert_plain`` for the models in
    ``plain``) in one transaction on ``database``; when it fails, each model's rows alone. The
    groups written."""
    plain = plain or {}
    restore = [_unsaved(model_rows) for _model, model_rows in groups]
    try:
        with transaction.atomic(using=database):
            for model, model_rows in groups:
                _write_model(database, model, model_rows, plain)
        return groups
    except Exception:
        if len(groups) == 1:
            log.exception("request scope: could not write %d %s rows", len(groups[0][1]), groups[0][0].__name__)
            return []
        log.exception("request scope: could not write the deferred rows together; writing each model alone")
    written = []
    for (model, model_rows), give_back in zip(groups, restore, strict=True):
        give_back()
        try:
            with transaction.atomic(using=database):
                _write_model(database, model, model_rows, plain)
            written.append((model, model_rows))
        except Exception:  # one failing write does not hide the others
            log.exception("request scope: could not write %d %s rows", len(model_rows), model.__name__)
    return written


class _GroupCommit:
    """The rows the threads of this process write at the same time, committed together (see the
    module's docstring): per database, the rows queued and whether a thread is writing them."""

    def __init__(self) -> None:
        self.ready = threading.Condition()
        self.queued: dict[str, list[_Pending]] = {}
        self.writing: set[str] = set()
        #: held by a thread of a failed group while it writes its own rows: they write one at a
        #: time, as the database takes writers (SQLite's shared cache refuses a second at once)
        self.in_turn = threading.Lock()

    def write(self, database: str, groups: list[tuple[type[Row], list[Row]]],
              plain: dict[type[models.Model], bool] | None = None) -> bool:
        """Queue ``groups`` and return once they are committed (True), with the other threads'
        rows queued meanwhile; False: the transaction they were in failed and nothing of them is
        written (the caller writes them alone, holding ``in_turn``)."""
        mine = _Pending(groups, plain or {})  # type: ignore[arg-type]
        with self.ready:
            self.queued.setdefault(database, []).append(mine)
            while mine.written is None and database in self.writing:
                self.ready.wait()
            if mine.written is not None:
                return mine.written
            self.writing.add(database)  # this thread writes what is queued, its own rows included
            batch = self.queued.pop(database)
        written = False  # also when the write is interrupted (a time limit): the waiters write alone
        try:
            written = _write_batch(database, batch)
        finally:
            with self.ready:
                for pending in batch:
                    pending.written = written if pending.written is None else pending.written
                self.writing.discard(database)
                self.ready.notify_all()
        return bool(mine.written)


class _Pending:
    def __init__(self, groups: list[tuple[type[models.Model], list[models.Model]]],
                 plain: dict[type[models.Model], bool]) -> None:
        self.groups = groups
        #: the models written by ``insert_plain`` (with ``ignore_conflicts``), as ``write_together``'s
        self.plain = plain
        #: None while queued; then whether the group's transaction committed
        self.written: bool | None = None


def _write_batch(database: str, batch: list[_Pending]) -> bool:
    """Every row of ``batch`` in one transaction on ``database``, one INSERT per model (the rows
    in the order they were queued); on failure their ids are given back (the rows are unsaved).
    Rows that are one plain INSERT statement (one model, at most ``PLAIN_BATCH`` rows: a
    scheduling trace record alone) are that statement in autocommit, which is a transaction by
    itself: no BEGIN and COMMIT of Django's ``atomic`` around it (its bookkeeping cost several
    times the statement). Several models' rows: on PostgreSQL, when every model's are plain and at
    most the last gives keys back, one query with no BEGIN or COMMIT of its own (``written_together``;
    the models in another order, each table's rows in theirs), else one transaction."""
    by_model: dict[type[models.Model], list[models.Model]] = {}
    plain: dict[type[models.Model], bool] = {}
    for pending in batch:
        plain.update(pending.plain)
        for model, model_rows in pending.groups:
            by_model.setdefault(model, []).extend(model_rows)
    restore = _unsaved([row for rows in by_model.values() for row in rows])
    alone = len(by_model) == 1 and _one_statement(database, *next(iter(by_model.items())), plain)
    # on PostgreSQL the plain INSERTs are one query (``written_together``), those that give keys
    # back last (a query answers with its last statement's rows), the ORM's after them
    order = sorted(by_model.items(), key=lambda item: (item[0] not in plain, _returns_keys(item[0], item[1], plain)))
    try:
        together = not alone and all(model in plain for model in by_model)  # (an ORM write opens it anyway)
        with contextlib.nullcontext() if alone else written_together(database) if together \
                else transaction.atomic(using=database):
            for model, model_rows in order:
                _write_model(database, model, model_rows, plain)
        return True
    except Exception:
        log.warning("request scope: %d threads' rows could not be written together; each writes its own alone",
                    len(batch), exc_info=True)
        restore()
        return False


def _one_statement(database: str, model: type[models.Model], rows: list[Any],
                   plain: dict[type[models.Model], bool]) -> bool:
    """Whether ``rows`` of ``model`` are written by one statement that commits by itself on
    ``database`` (a plain INSERT of at most ``PLAIN_BATCH`` rows, the connection in autocommit)."""
    if model not in plain or len(rows) > PLAIN_BATCH:
        return False
    connection = connections[database]
    return not connection.in_atomic_block and connection.get_autocommit()


_group = _GroupCommit()


class RequestScopeMiddleware:
    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        with request_scope():
            return self.get_response(request)

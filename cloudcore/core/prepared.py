"""A hot ``values_list`` query whose SQL is built once per process, then only executed.

Django builds a query's SQL again on every evaluation (the filters resolved, the joins set up, the
compiler run): for the few statements every ``POST /servers`` makes, building costs more CPU than
SQLite spends running them. ``prepared_rows(key, build, args)`` builds the queryset ``build`` makes
from placeholder arguments once, compiles it, and remembers where each placeholder landed among the
statement's parameters; each call then sends that SQL with the caller's ``args`` in their places, on
the database the router chose for the queryset.

Only for arguments Django passes to the database as they are (strings compared with a
``CharField``), and rows wanted as the database gives them (no field converters: a boolean
expression comes back as 0/1 from SQLite). When a placeholder does not reach the parameters
unchanged the query is built by the ORM on every call, as before.

``prepared_objects`` does the same for a queryset of model instances (annotations and
``select_related`` included): the row's values go through the fields' converters, as the ORM's, and
become instances by the model's ``from_db``, their related instances by Django's own populators
(made once: they keep no state of a query). Not for ``only``/``defer`` or prefetching (built by the
ORM, as when the query cannot be prepared).

``prepared_first`` is ``QuerySet.first()`` of such a query; ``prepared_in_rows`` and
``prepared_in_objects`` read the rows of a list of values (``__in``): prepared when the list has one
value (a server's status poll asks its extras of one server), as ``values_in`` for more. A statement
of a cell's model runs on the database it was prepared on: its key names the cell's database.

On PostgreSQL each of these statements is also prepared on the server, once per connection
(``cloudcore.core.serverprepared``): the server plans it at its first execution there and keeps
that plan.

A statement is worked out by one thread at a time (``_preparing``): the threads of a process just
started that need it at once wait for the first instead of each building it again on the GIL.

``RawRows`` reads a queryset's rows as the database gives them and makes instances of those asked
(a page merged from several cells keeps only its first rows of them all). Both read SQLite's
datetime values in one call each (``_faster``), where Django's converter makes four and a costly one.
"""
from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Sequence
from typing import Any, cast

from django.conf import settings
from django.core.exceptions import EmptyResultSet
from django.db import connections, transaction
from django.db.backends.sqlite3.base import DatabaseWrapper as SQLiteWrapper
from django.db.models import JSONField, QuerySet
from django.db.models.query import ModelIterable, get_related_populators  # type: ignore[attr-defined]
from django.db.models.sql import UpdateQuery

from .serverprepared import server_prepared
from .sqlin import values_in

#: key: (database alias, SQL, for each parameter: the index of the argument or None, the constants)
_statements: dict[str, tuple[str, str, list[int | None], list[Any]] | None] = {}
#: held while a statement is worked out (see the module docstring)
_preparing = threading.RLock()


def _placeholder(index: int) -> str:
    return f"\x00prepared-argument-{index}\x00"


def _argument_positions(params: Sequence[Any], count: int) -> list[int | None] | None:
    """For each of a statement's parameters the index of the placeholder argument it is, or None
    for a constant; None when an argument was changed on its way (or used twice): not preparable."""
    placeholders = [_placeholder(i) for i in range(count)]
    where: list[int | None] = [placeholders.index(p) if isinstance(p, str) and p in placeholders else None
                               for p in params]
    if sorted(i for i in where if i is not None) != list(range(count)) or any(
            isinstance(p, str) and "\x00prepared-argument-" in p for p, i in zip(params, where, strict=True)
            if i is None):
        return None
    return where


def _prepare(build: Callable[..., QuerySet[Any]], count: int) -> tuple[str, str, list[int | None],
                                                                                  list[Any]] | None:
    queryset = build(*(_placeholder(i) for i in range(count)))
    sql, params = queryset.query.get_compiler(using=queryset.db).as_sql()
    where = _argument_positions(params, count)
    return None if where is None else (queryset.db, server_prepared(sql), where, list(params))


def prepared_rows(key: str, build: Callable[..., QuerySet[Any]], args: Sequence[str]) -> list[tuple[Any, ...]]:
    """The rows of ``build(*args)`` (a ``values_list`` queryset), its SQL built once per process
    under ``key``."""
    if key not in _statements:
        with _preparing:
            if key not in _statements:
                _statements[key] = _prepare(build, len(args))
    statement = _statements[key]
    if statement is None:
        return [tuple(row) for row in build(*args)]
    database, sql, where, constants = statement
    return [tuple(row) for row in _execute(database, sql, where, constants, args)]


def _execute(database: str, sql: str, where: list[int | None], constants: list[Any],
             args: Sequence[str]) -> list[Any]:
    """The rows of a prepared statement: ``args`` in the parameters ``where`` names, its
    constants in the others."""
    params = [constants[n] if i is None else args[i] for n, i in enumerate(where)]
    with connections[database].cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


def _faster(converter: Any, connection: Any) -> Any:
    """``converter``, or the same conversion in fewer calls: Django's SQLite reading of a datetime
    column (the sqlite3 module's declared-type decoding has made it a naive datetime; then the
    settings asked and ``make_aware``'s ``replace(tzinfo=...)``, whose keyword parsing alone is some
    6,000 instructions: 4,000 values a detail page of 1,000 rows) becomes one ``combine`` of the
    value's date and time with UTC, when the time zone is UTC (as cloudcore's settings have it); a
    text (a column read without its declared type) is one ``fromisoformat`` with the UTC offset put
    after it. Anything else (an aware value, a text with an offset of its own, a date alone) is read
    by Django's converter."""
    if getattr(converter, "__func__", None) is not SQLiteWrapper.ops_class.convert_datetimefield_value \
            or not settings.USE_TZ or connection.timezone is not dt.UTC:
        return converter
    naive, combine, fromisoformat, utc = dt.datetime, dt.datetime.combine, dt.datetime.fromisoformat, dt.UTC

    def convert(value: Any, expression: Any, connection: Any) -> Any:
        if value.__class__ is naive and value.tzinfo is None:
            return combine(value, value.time(), utc)
        if value.__class__ is str:
            try:
                read = fromisoformat(value + "+00:00")
            except ValueError:
                return converter(value, expression, connection)
            if read.tzinfo is utc:
                return read
        return converter(value, expression, connection)

    return convert


class _Objects:
    """What turns a prepared statement's rows into a model's instances (Django's ModelIterable,
    once per process): the model, where its fields are in the row and their names, the
    annotations' positions, each converted column's converters, the populators of the related
    instances read with it (``select_related``)."""

    def __init__(self, queryset: QuerySet[Any], *, unconverted: bool = False) -> None:
        compiler = queryset.query.get_compiler(using=queryset.db)
        self.sql, params = compiler.as_sql()
        self.params = list(params)
        klass_info = compiler.klass_info
        select = compiler.select
        self.model = klass_info["model"]
        start, end = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
        self.fields = slice(start, end)
        self.attnames = [column[0].target.attname for column in select[start:end]]
        self.annotations = list(compiler.annotation_col_map.items())
        self.populators = get_related_populators(klass_info, select, queryset.db)
        connection = connections[queryset.db]
        self.converters = [(position, [_faster(function, connection) for function in functions], expression)
                           for position, (functions, expression)
                           in compiler.get_converters([column[0] for column in select]).items()]
        if unconverted:
            self.sql = _select_unconverted(self, compiler, connection)
        self.sql = server_prepared(self.sql)

    def objects(self, database: str, rows: list[Any]) -> list[Any]:
        connection = connections[database]
        return [self.instance(database, connection, raw) for raw in rows]

    def instance(self, database: str, connection: Any, raw: Sequence[Any]) -> Any:
        """The instance of one row as the database gives it."""
        row = list(raw)
        for position, functions, expression in self.converters:
            value = row[position]
            for function in functions:
                value = function(value, expression, connection)
            row[position] = value
        obj = self.model.from_db(database, self.attnames, row[self.fields])
        for populator in self.populators:
            populator.populate(row, obj)
        for name, position in self.annotations:
            setattr(obj, name, row[position])
        return obj


#: key: (database alias, what makes the instances, for each parameter: argument index or None)
_object_statements: dict[str, tuple[str, _Objects, list[int | None]] | None] = {}


def _prepare_objects(build: Callable[..., QuerySet[Any]], count: int) -> tuple[str, _Objects,
                                                                                 list[int | None]] | None:
    queryset = build(*(_placeholder(i) for i in range(count)))
    query = queryset.query
    if (queryset._iterable_class is not ModelIterable or getattr(queryset, "_prefetch_related_lookups", False)
            or query.deferred_loading != (frozenset(), True) or getattr(queryset, "_known_related_objects", None)):
        return None  # not instances with all their fields (and related ones read with them): the ORM's
    objects = _Objects(queryset)
    where = _argument_positions(objects.params, count)
    return None if where is None else (queryset.db, objects, where)


def prepared_objects(key: str, build: Callable[..., QuerySet[Any]], args: Sequence[str]) -> list[Any]:
    """The model instances of ``build(*args)`` (annotations set on them), its SQL built and its
    row reading worked out once per process under ``key``."""
    if key not in _object_statements:
        with _preparing:
            if key not in _object_statements:
                _object_statements[key] = _prepare_objects(build, len(args))
    statement = _object_statements[key]
    if statement is None:
        return list(build(*args))
    database, objects, where = statement
    return objects.objects(database, _execute(database, objects.sql, where, objects.params, args))


def prepared_first(key: str, build: Callable[..., QuerySet[Any]], args: Sequence[str]) -> Any | None:
    """``build(*args).first()`` (ordered by the primary key when the queryset is not ordered, one
    row), its SQL built and its row reading worked out once per process under ``key``."""
    def first(*values: str) -> QuerySet[Any]:
        queryset = build(*values)
        return (queryset if queryset.ordered else queryset.order_by("pk"))[:1]

    found = prepared_objects(key, first, args)
    return found[0] if found else None


def prepared_in_rows(key: str, build: Callable[[Any], QuerySet[Any]], values: Sequence[str]) -> list[tuple[Any, ...]]:
    """The rows of the ``values_list`` queryset ``build(values_in(values))`` (``build`` takes the
    right-hand side of its ``__in`` lookup), as the database gives them (see ``prepared_rows``); for
    one value its SQL built once per process under ``key``; none for no value (Django's empty ``IN``
    sends none either)."""
    if len(values) == 1:
        return prepared_rows(key, lambda value: build([value]), values)
    return [tuple(row) for row in build(values_in(values))] if values else []


def prepared_in_objects(key: str, build: Callable[[Any], QuerySet[Any]], values: Sequence[str]) -> list[Any]:
    """The model instances of ``build(values_in(values))`` (as ``prepared_in_rows``); for one value
    its SQL built and its row reading worked out once per process under ``key``."""
    if len(values) == 1:
        return prepared_objects(key, lambda value: build([value]), values)
    return list(build(values_in(values))) if values else []


#: the declared column types whose values SQLite's DB-API module converts as it reads a row (Django
#: registers those converters): ``bool``, ``date``, ``time``, ``datetime``, ``timestamp``
_DECLARED_CONVERTED = frozenset({"bool", "date", "time", "datetime", "timestamp"})


def _select_unconverted(objects: _Objects, compiler: Any, connection: Any) -> str:
    """``objects``' SQL whose select list reads, on SQLite, each column of a declared type the DB-API
    module converts as it reads a row (``_DECLARED_CONVERTED``) and Django's converters convert after
    it as ``+column`` (the same value, with no declared type): the module then gives the stored text
    or integer and Django's converter alone reads it (a datetime in one ``fromisoformat``, where the
    module's converter parses it first and Django's makes it aware after: each datetime of every row
    read, the rows the merge of a page drops too). The SQL as it was when its select list is not the
    one expected (the value read by both converters, as before)."""
    sql: str = objects.sql
    if connection.vendor != "sqlite":
        return sql
    converted = {position for position, _functions, _expression in objects.converters}
    columns, unconverted = [], []
    for position, (expression, (column, params), alias) in enumerate(compiler.select):
        if alias or params:
            return sql
        columns.append(column)
        target = getattr(expression, "target", None)
        declared = target.db_type(connection) if target is not None else None
        unconverted.append(f"+{column}" if declared in _DECLARED_CONVERTED and position in converted else column)
    # the compiler's own column references only, no value: the values stay parameters
    expected = f"SELECT {', '.join(columns)} FROM "  # noqa: S608
    if not sql.startswith(expected):
        return sql
    return f"SELECT {', '.join(unconverted)} FROM {sql[len(expected):]}"  # noqa: S608


def _shared_json(converters: list[tuple[int, list[Any], Any]]) -> list[tuple[int, list[Any], Any]]:
    """``converters`` with those of the model's JSON columns reading each stored text once: a text
    equal to one read before gives the very value read then (the rows of a page share a few flavors,
    images and empty metadata: parsing them again was a page's costliest conversion)."""
    shared = []
    for position, functions, expression in converters:
        field = getattr(expression, "target", None)
        if isinstance(field, JSONField) and functions:
            functions = [_read_once(functions)]
        shared.append((position, functions, expression))
    return shared


def _read_once(functions: list[Any]) -> Callable[[Any, Any, Any], Any]:
    """``functions`` (a column's converters) applied once per distinct text read."""
    read: dict[str, Any] = {}

    def convert(value: Any, expression: Any, connection: Any) -> Any:
        if value.__class__ is str:
            known = read.get(value, read)
            if known is not read:
                return known
        text = value
        for function in functions:
            value = function(value, expression, connection)
        if text.__class__ is str:
            read[text] = value
        return value

    return convert


class RawRows:
    """A queryset's rows as the database gives them, each made an instance only when asked: for a
    page merged from several cells' rows, where each cell reads up to the page's size and the merge
    keeps the page's first rows of them all (a page of 1,000 of two cells: half the 2,000 rows read
    are dropped, and converting a row and making it an instance costs more than reading it). The
    rows are read by ``rows()`` in the database's context; ``value`` and ``instance`` work on them
    afterwards, in any thread. Instances as ``QuerySet`` makes them (``only()``, annotations
    and ``select_related`` included; not prefetching). With ``shared_json``, the values of the
    model's JSON columns read from equal texts are one object (``_shared_json``): for rows only
    read, never changed (a list page's), since changing one row's value would change the others'."""

    def __init__(self, queryset: QuerySet[Any], *, shared_json: bool = False) -> None:
        self.database = queryset.db
        self.connection = connections[self.database]
        try:
            self.reader: _Objects | None = _Objects(queryset, unconverted=True)
        except EmptyResultSet:  # a condition no row meets (an IN list of nothing): no statement to run
            self.reader = None
        if shared_json and self.reader is not None:
            self.reader.converters = _shared_json(self.reader.converters)
        #: attname: (its position in a row, its converters, their expression)
        self._columns: dict[str, tuple[int, list[Any], Any]] = {}
        #: The fields (attnames) each instance is made with: one frozenset for all the rows.
        self.loaded: frozenset[str] = frozenset(self.reader.attnames if self.reader is not None else ())
        if self.reader is not None:
            converters = {position: (functions, expression)
                          for position, functions, expression in self.reader.converters}
            for i, attname in enumerate(self.reader.attnames):
                position = self.reader.fields.start + i
                functions, expression = converters.get(position, ([], None))
                self._columns[attname] = (position, functions, expression)

    def rows(self) -> list[Any]:
        if self.reader is None:
            return []
        with self.connection.cursor() as cursor:
            cursor.execute(self.reader.sql, self.reader.params)
            return list(cursor.fetchall())

    def value(self, row: Sequence[Any], attname: str) -> Any:
        """The converted value of the field ``attname`` in ``row``."""
        position, functions, expression = self._columns[attname]
        value = row[position]
        for function in functions:
            value = function(value, expression, self.connection)
        return value

    def instance(self, row: Sequence[Any]) -> Any:
        assert self.reader is not None
        return self.reader.instance(self.database, self.connection, row)


class _Update:
    """A prepared ``UPDATE``: its database and SQL, the fields it sets (each value prepared as the
    ORM prepares it, ``get_db_prep_save``), and for each parameter of its ``WHERE`` the index of the
    argument or None for a constant."""

    def __init__(self, database: str, sql: str, fields: list[tuple[str, Any]], where: list[int | None],
                 constants: list[Any]) -> None:
        self.database, self.sql, self.fields, self.where, self.constants = database, sql, fields, where, constants


#: key: (the caller's key, the names of the values set, those of them that are None)
_update_statements: dict[tuple[str, tuple[str, ...], tuple[str, ...]], _Update | None] = {}


def _prepare_update(build: Callable[..., QuerySet[Any]], count: int, values: dict[str, Any]) -> _Update | None:
    queryset = build(*(_placeholder(i) for i in range(count)))
    queryset._for_write = True  # type: ignore[attr-defined]  # the database ``update`` writes on
    query = cast(UpdateQuery, queryset.query.chain(UpdateQuery))
    query.add_update_values(values)
    if query.related_updates or any(hasattr(value, "resolve_expression") or hasattr(value, "prepare_database_save")
                                    for _field, _model, value in query.values):
        return None  # what the ORM alone knows how to write
    query.annotations = {}
    sql, params = query.get_compiler(queryset.db).as_sql()
    # each value set (by the name it was given: a field's or its attname, ``compute_id``) with its
    # field, in the SQL's order (``values``'); those that are None are NULL in the SQL
    fields = [(name, field) for name, (field, _model, value) in zip(values, query.values, strict=True)
              if value is not None]
    where = _argument_positions(params[len(fields):], count)
    return None if where is None else _Update(queryset.db, server_prepared(sql), fields, where,
                                              list(params[len(fields):]))


def prepared_update(key: str, build: Callable[..., QuerySet[Any]], args: Sequence[str], **values: Any) -> int:
    """``build(*args).update(**values)``, its SQL built once per process under ``key`` for each set of
    the values' names and of those that are None (which Django writes as NULL in the SQL); each call
    prepares the values as ``update`` does and sends the statement. Returns the number of rows
    updated, as ``update``. Values that are expressions, or a query whose arguments do not reach
    the parameters unchanged, are written by the ORM, as before."""
    names = tuple(values)
    statement_key = (key, names, tuple(name for name in names if values[name] is None))
    if statement_key not in _update_statements:
        _update_statements[statement_key] = _prepare_update(build, len(args), values)
    statement = _update_statements[statement_key]
    if statement is None or any(hasattr(value, "resolve_expression") or hasattr(value, "prepare_database_save")
                                for value in values.values()):
        return int(build(*args).update(**values))  # (an expression or a model: the ORM's, whatever was prepared)
    connection = connections[statement.database]
    params = [field.get_db_prep_save(values[name], connection=connection) for name, field in statement.fields]
    params += [statement.constants[n] if i is None else args[i] for n, i in enumerate(statement.where)]
    with transaction.mark_for_rollback_on_error(using=statement.database), connection.cursor() as cursor:
        cursor.execute(statement.sql, params)
        return int(cursor.rowcount)

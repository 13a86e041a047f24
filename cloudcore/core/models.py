"""Model bases shared by every app: where a model lives, timestamps, soft delete; a JSON field
read with orjson.

A model's *home* decides its database: ``ApiModel`` rows live only in the API database
(``default``); ``CellModel`` rows live only in the cell database chosen with
``cells.context.target_cell``. ``cells.router.CellRouter`` enforces both.
"""
from __future__ import annotations

from typing import Any, TypeVar

import orjson
from django.db import models
from django.utils import timezone


class RowidAutoField(models.BigAutoField):  # type: ignore[type-arg]
    """A 64-bit auto primary key that SQLite takes as the table's rowid without ``AUTOINCREMENT``
    (Django's): a new row is given the largest id plus one, without a write to ``sqlite_sequence``
    in each inserting transaction. An id can then be given again once the row with the largest has
    been deleted: for rows whose id nobody outside names. PostgreSQL's is BigAutoField's."""

    def db_type_suffix(self, connection: Any) -> str | None:
        if connection.vendor == "sqlite":
            return None
        suffix: str | None = super().db_type_suffix(connection)  # type: ignore[misc]  # (not in django-stubs)
        return suffix


class ApiModel(models.Model):
    """A row of the API database."""

    class Meta:
        abstract = True


class CellModel(models.Model):
    """A row of a cell database; using it without a targeted cell raises ``CellNotTargeted``."""

    class Meta:
        abstract = True


class JSONField(models.JSONField):
    """Django's ``JSONField``, whose stored text is parsed with orjson (the JSON columns of a
    1,000-server list page: three per row, the page's costliest conversion with ``json.loads``).
    orjson gives the same values, except for an integer beyond 64 bits, which it reads as a float
    (``json``: the exact int); the columns that use it hold none (client values there are strings;
    flavor sizes are 32-bit). What orjson refuses (NaN) is left to Django's own reading.
    (A guard that looked for 19-digit runs with a regular expression cost more instructions than
    orjson saved.) Migrations see a plain ``models.JSONField``."""

    def from_db_value(self, value: Any, expression: Any, connection: Any) -> Any:
        if isinstance(value, str) and self.decoder is None:
            try:
                return orjson.loads(value)
            except orjson.JSONDecodeError:
                pass
        return super().from_db_value(value, expression, connection)

    def deconstruct(self) -> Any:
        name, _, args, kwargs = super().deconstruct()
        return name, "django.db.models.JSONField", args, kwargs


class CodePointCharField(models.CharField):  # type: ignore[type-arg]
    """A ``CharField`` whose values sort by code point on every backend, as Python compares strings:
    on PostgreSQL its column has the ``"C"`` collation (the database's default may be linguistic,
    ``en_US.UTF-8`` on most installations: case then weighs less than letters, so ``B`` sorts after
    ``a`` there and before it in Python); SQLite's default (``BINARY``) already is. For the sort keys
    of a list merged from several databases in Python (the servers of every cell:
    ``servers.selectors.server_list``), whose cells' SQL must order and page their rows as the merge
    does. Equality is the same under either collation."""

    def db_parameters(self, connection: Any) -> dict[str, Any]:
        parameters: dict[str, Any] = super().db_parameters(connection)
        if connection.vendor == "postgresql":
            parameters["collation"] = "C"
        return parameters


class TimestampedModel(models.Model):
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            self.updated_at = timezone.now()
            update_fields = kwargs.get("update_fields")
            if update_fields is not None:
                kwargs["update_fields"] = {*update_fields, "updated_at"}
        super().save(*args, **kwargs)


_M = TypeVar("_M", bound=models.Model)


class LiveManager(models.Manager[_M]):
    """Rows not soft-deleted (Nova's ``read_deleted='no'``)."""

    def get_queryset(self) -> models.QuerySet[_M]:
        return super().get_queryset().filter(deleted=False)


class SoftDeleteModel(TimestampedModel):
    """Soft delete as Nova does it: rows stay until ``db archive_deleted_rows`` purges them.

    ``objects`` sees live rows; ``all_objects`` sees deleted ones too (``read_deleted='yes'``).
    """

    deleted = models.BooleanField(default=False, db_index=True)
    deleted_at = models.DateTimeField(null=True, blank=True)

    objects = LiveManager()
    all_objects = models.Manager()

    class Meta:
        abstract = True
        base_manager_name = "all_objects"
        default_manager_name = "all_objects"

    def soft_delete(self) -> None:
        self.deleted = True
        self.deleted_at = timezone.now()
        self.save(update_fields=["deleted", "deleted_at"])


class HardLimit(ApiModel, TimestampedModel):
    """One resource's hard limit (a quota); -1 is unlimited. Each service's quota tables build on it."""

    resource = models.CharField(max_length=255)
    hard_limit = models.IntegerField()

    class Meta:
        abstract = True


class ProjectHardLimit(HardLimit):
    """A project's own hard limit for one resource; a resource without a row takes its service's
    default. Subclasses name their ``(project_id, resource)`` unique constraint."""

    project_id = models.CharField(max_length=255, db_index=True)

    class Meta:
        abstract = True


class NotificationRecord(ApiModel):
    """The last versioned notifications, kept for the web console (API database)."""

    event_type = models.CharField(max_length=255, db_index=True)
    priority = models.CharField(max_length=16)
    publisher_id = models.CharField(max_length=255)
    timestamp = models.DateTimeField(default=timezone.now, db_index=True)
    payload = models.JSONField(default=dict)

    class Meta:
        ordering = ["-timestamp", "-id"]


class ChangeStamp(ApiModel):
    """The stamp of a kind of row that processes remember reads of (``cloudcore.core.stamps``):
    ``value`` is drawn at random by each write of such a row, in its transaction."""

    key = models.CharField(primary_key=True, max_length=64)
    value = models.BigIntegerField()

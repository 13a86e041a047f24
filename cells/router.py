"""Send every model to its home database.

- API models (and Django's own apps) live only in ``default``.
- Cell models (subclasses of ``cloudcore.core.models.CellModel``) live only in cell databases
  and are read and written only in the cell targeted with ``cells.context.target_cell``;
  without a target, or with an object loaded from another cell, the router raises.
- A compute agent (``cells.isolation``) may use only its own cell's database.
"""
from __future__ import annotations

from typing import Any

from django.apps import apps
from django.db import DEFAULT_DB_ALIAS

from cloudcore.core.exceptions import CellNotTargeted, ObjectActionError
from cloudcore.core.models import CellModel

from .context import current_alias
from .isolation import check_database


def is_cell_model(model: type) -> bool:
    return isinstance(model, type) and issubclass(model, CellModel)


def _is_cell_model_name(app_label: str, model_name: str | None) -> bool:
    if model_name is None:
        return False
    try:
        model = apps.get_model(app_label, model_name)
    except LookupError:
        return False
    return is_cell_model(model)


class CellRouter:
    def _cell_db(self, model: type, hints: dict[str, Any]) -> str:
        alias = current_alias()
        if alias is None:
            raise CellNotTargeted(model=model.__name__)
        instance = hints.get("instance")
        loaded_from = getattr(getattr(instance, "_state", None), "db", None)
        if loaded_from is not None and loaded_from != alias:
            raise ObjectActionError(
                action="save",
                reason=(
                    f"{model.__name__} was loaded from database {loaded_from!r} but cell "
                    f"{alias!r} is targeted"
                ),
            )
        return alias

    def _db(self, model: type, hints: dict[str, Any]) -> str:
        alias = self._cell_db(model, hints) if is_cell_model(model) else DEFAULT_DB_ALIAS
        check_database(model.__name__, alias)
        return alias

    def db_for_read(self, model: type, **hints: Any) -> str:
        return self._db(model, hints)

    def db_for_write(self, model: type, **hints: Any) -> str:
        return self._db(model, hints)

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool | None:
        return bool(obj1._state.db == obj2._state.db)

    def allow_migrate(
        self, db: str, app_label: str, model_name: str | None = None, **hints: Any
    ) -> bool:
        model = hints.get("model")
        if model is not None and model_name is None:
            model_name = model._meta.model_name
        if _is_cell_model_name(app_label, model_name):
            return db != DEFAULT_DB_ALIAS
        if model_name is None and hints.get("cell_only"):
            return db != DEFAULT_DB_ALIAS
        return db == DEFAULT_DB_ALIAS

"""``manage.py migrate``: Django's migrate, extended to migrate every cell database too.

Without ``--database`` (or with ``--database default``) it migrates the API database and then
each cell of the CellMapping table; ``--api-only`` keeps Django's plain behaviour. With
``--database <alias>`` it migrates just that connection. Each table is created only where the
router says it belongs.
"""
from __future__ import annotations

from typing import Any

from django.core.management.commands.migrate import Command as DjangoMigrate
from django.db import DEFAULT_DB_ALIAS

from cells.models import CellMapping
from cells.registry import alias_for


class Command(DjangoMigrate):
    help = "Migrate the API database and every cell database."

    def add_arguments(self, parser: Any) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--api-only", action="store_true", help="Migrate only the API database."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        api_only = options.pop("api_only", False)
        super().handle(*args, **options)
        if api_only or options["database"] != DEFAULT_DB_ALIAS or options.get("app_label"):
            return
        for cell in CellMapping.objects.all():
            alias = alias_for(cell)
            if options["verbosity"] >= 1:
                self.stdout.write(self.style.MIGRATE_HEADING(f"Cell {cell.name} ({alias}):"))
            super().handle(*args, **{**options, "database": alias})

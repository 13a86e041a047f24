from django.apps import AppConfig


class CellsConfig(AppConfig):
    name = "cells"
    verbose_name = "Cells"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from .models import CellMapping

        # a request that changes a cell reads the cells again (selectors.all_cells)
        post_save.connect(_forget_cells, sender=CellMapping, dispatch_uid="cells-forget-on-save")
        post_delete.connect(_forget_cells, sender=CellMapping, dispatch_uid="cells-forget-on-delete")


def _forget_cells(**kwargs: object) -> None:
    from cloudcore.core import scope

    from .selectors import CELLS_KEY

    scope.forget(CELLS_KEY)

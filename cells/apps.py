from django.apps import AppConfig


class CellsConfig(AppConfig):
    name = "cells"
    verbose_name = "Cells"

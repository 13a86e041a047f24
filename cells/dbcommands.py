"""Subcommands of ``manage.py db`` (Nova's ``nova-manage db``), looked up by name.

Each entry is ``name -> (add_arguments(parser), run(options, stdout, stderr) -> exit code)``.
An app contributes one by adding to ``DB_SUBCOMMANDS`` from its ``dbcommands`` module, which the
``db`` command imports for every installed app (``<app>.dbcommands``).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

AddArgs = Callable[[Any], None]
Run = Callable[[dict[str, Any], Any, Any], int]
DB_SUBCOMMANDS: dict[str, tuple[AddArgs, Run]] = {}

"""Create (idempotently) the demo cloud's objects: every app's ``demo.setup``."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from cloudcore.core.demo import run_setups


class Command(BaseCommand):
    help = "Create the demo cloud (cells, users, flavors, images, network, ...); idempotent."

    def handle(self, *args: Any, **options: Any) -> None:
        run_setups(self.stdout.write)

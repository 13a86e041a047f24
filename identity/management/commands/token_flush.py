"""``manage.py token_flush [--older-than SECONDS] [--dry-run]``: purge expired and revoked tokens."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.utils import timezone

from identity.models import Token
from identity.services.tokens import token_flush


class Command(BaseCommand):
    help = "Delete expired (and expired revoked) tokens from the API database."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--older-than", type=int, default=0, help="keep tokens expired less than this (s)")
        parser.add_argument("--dry-run", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["dry_run"]:
            count = Token.objects.filter(expires_at__lt=timezone.now()).count()
            self.stdout.write(f"(dry run) {count} expired tokens would be deleted")
            return
        self.stdout.write(f"deleted {token_flush(older_than_seconds=options['older_than'])} tokens")

"""Expire pending gallery operations past their expiry."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from ...services.gallery_add import operations_expire


class Command(BaseCommand):
    help = "Expire pending gallery operations whose time is up."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("expire", help="Mark every overdue pending operation expired.")

    def handle(self, *args: Any, **options: Any) -> None:
        self.stdout.write(f"Expired {operations_expire()} pending operation(s).")

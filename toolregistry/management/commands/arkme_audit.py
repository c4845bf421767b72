"""Retention of the tool-call audit, which is otherwise append-only."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...audit import tool_calls_prune


class Command(BaseCommand):
    help = "Prune the tool-call audit."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        prune = sub.add_parser("prune", help="Delete audit rows older than a number of days.")
        prune.add_argument("--older-than", type=int, required=True, metavar="DAYS",
                           help="Keep the last DAYS days (at least 1).")

    def handle(self, *args: Any, **options: Any) -> None:
        days = options["older_than"]
        if days < 1:
            raise CommandError("--older-than takes at least 1 day.")
        self.stdout.write(f"Deleted {tool_calls_prune(older_than_days=days)} tool call(s) older than {days} day(s).")

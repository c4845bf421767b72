"""Retention and export of the tool-call audit and the approval record, otherwise append-only."""
from __future__ import annotations

from datetime import datetime, time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from ...audit import tool_calls_prune
from ...audit_export import audit_export_lines


def _since(value: str) -> datetime:
    """A date (from its midnight, in the current time zone) or an ISO 8601 date and time."""
    try:
        moment = parse_datetime(value)
        if moment is None:
            day = parse_date(value)
            if day is None:
                raise ValueError(value)
            moment = datetime.combine(day, time.min)
    except ValueError:
        raise CommandError(f"--since takes a date (2026-01-31) or a date and time, not {value!r}.") from None
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment)


class Command(BaseCommand):
    help = "Prune the tool-call audit and the approval record, or export them as JSON lines."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        prune = sub.add_parser("prune", help="Delete audit rows older than a number of days.")
        prune.add_argument("--older-than", type=int, required=True, metavar="DAYS",
                           help="Keep the last DAYS days (at least 1).")
        export = sub.add_parser("export", help="Write tool calls and approval decisions as JSON lines.")
        export.add_argument("--since", required=True, metavar="DATE",
                            help="From this date (or ISO 8601 date and time) on.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["action"] == "export":
            for line in audit_export_lines(since=_since(options["since"])):
                self.stdout.write(line, ending="")
            return
        days = options["older_than"]
        if days < 1:
            raise CommandError("--older-than takes at least 1 day.")
        self.stdout.write(f"Deleted {tool_calls_prune(older_than_days=days)} tool call(s) older than {days} day(s).")

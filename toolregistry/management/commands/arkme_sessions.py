"""Close idle agent sessions and remove the attachments of ended ones."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from arkme.conversations.sessions import sessions_purge

from ...approval_record import approvals_lapsed_recorded
from ...idempotency import idempotency_purge
from ...limits import rate_windows_purge


class Command(BaseCommand):
    help = ("Purge idle agent sessions, their captured attachments, expired idempotency keys and the call "
            "limits' ended windows; record the approvals that lapsed unused.")

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("purge", help="Close idle sessions and delete the attachments of ended ones.")

    def handle(self, *args: Any, **options: Any) -> None:
        keys = idempotency_purge()
        closed = sessions_purge()
        windows = rate_windows_purge()
        lapsed = approvals_lapsed_recorded()
        self.stdout.write(f"Closed {closed} idle session(s); attachments of ended sessions removed; "
                          f"{keys} expired idempotency key(s) forgotten; {windows} ended limit window(s) forgotten; "
                          f"{lapsed} lapsed approval(s) recorded expired.")

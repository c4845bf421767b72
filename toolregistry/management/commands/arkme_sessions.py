"""Close idle agent sessions and remove the attachments of ended ones."""
from __future__ import annotations

from django.core.management.base import BaseCommand

from ...sessions import sessions_purge


class Command(BaseCommand):
    help = "Purge idle agent sessions, their captured attachments and expired idempotency keys."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("purge", help="Close idle sessions and delete the attachments of ended ones.")

    def handle(self, *args, **options):
        closed = sessions_purge()
        self.stdout.write(f"Closed {closed} idle session(s); attachments of ended sessions and expired "
                          "idempotency keys removed.")

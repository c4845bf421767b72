"""List, approve or decline join requests from the command line."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from arkme.kernel.errors import ArkmeError

from ...models import JoinRequest, JoinRequestStatus
from ...services import join_request_decide


class Command(BaseCommand):
    help = "List pending join requests, or approve / decline one by id."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        listing = sub.add_parser("list", help="Pending join requests (all with --all).")
        listing.add_argument("--all", action="store_true")
        for name in ("approve", "decline"):
            decide = sub.add_parser(name, help=f"{name.title()} a join request.")
            decide.add_argument("id", type=int)

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        if action == "list":
            rows = JoinRequest.objects.select_related("group", "account")
            if not options["all"]:
                rows = rows.filter(status=JoinRequestStatus.PENDING)
            self.stdout.write(f"{'id':>6}  {'group':<24} {'person':<24} {'status':<9} requested")
            for r in rows:
                self.stdout.write(f"{r.pk:>6}  {r.group.name:<24} {r.account.display_name:<24} {r.status:<9} {r.created_at:%Y-%m-%d %H:%M}")
            self.stdout.write(f"{rows.count()} request(s).")
            return
        try:
            decided = join_request_decide(request_id=options["id"], approve=action == "approve", by="command line")
        except ArkmeError as error:
            raise CommandError(error.message) from error
        self.stdout.write(f"{decided.status.title()} {decided.account.display_name}'s request to join {decided.group.name}.")

"""Manage DSH clients: create (prints the key once, alone on the last line), list, revoke, rotate."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from arkme.kernel.errors import ArkmeError

from ...clients import dsh_client_create, dsh_client_revoke, dsh_client_rotate
from ...models import DshClient


class Command(BaseCommand):
    help = "Create, list, revoke or rotate the keys of DSH clients."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="Create a client and print its key once.")
        create.add_argument("name")
        create.add_argument("--profiles", default="", help="Comma-separated profiles the client may use; all when omitted.")
        sub.add_parser("list", help="List clients.")
        revoke = sub.add_parser("revoke", help="Revoke a client's key.")
        revoke.add_argument("name")
        rotate = sub.add_parser("rotate", help="Issue a new key, invalidating the old one.")
        rotate.add_argument("name")
        rotate.add_argument("--reactivate", action="store_true", help="Also bring a revoked client back.")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        try:
            if action == "create":
                profiles = [p.strip() for p in options["profiles"].split(",") if p.strip()]
                client, key = dsh_client_create(name=options["name"], profiles=profiles)
                self.stdout.write(f"Created DSH client {client.name}. Its key, shown only now:")
                self.stdout.write(key)
            elif action == "rotate":
                client, key = dsh_client_rotate(name=options["name"], reactivate=options["reactivate"])
                self.stdout.write(f"New key for {client.name}, shown only now; the old key no longer works:")
                self.stdout.write(key)
            elif action == "revoke":
                client = dsh_client_revoke(name=options["name"])
                self.stdout.write(f"Revoked {client.name}.")
            else:
                rows = DshClient.objects.all()
                self.stdout.write(f"{'name':<24} {'key':<12} {'profiles':<28} status")
                for c in rows:
                    status = f"revoked {c.revoked_at:%Y-%m-%d}" if c.revoked_at else "active"
                    self.stdout.write(f"{c.name:<24} {c.key_prefix + '…':<12} {','.join(c.profiles) or 'all':<28} {status}")
                self.stdout.write(f"{rows.count()} client(s).")
        except ArkmeError as error:
            raise CommandError(error.message) from error

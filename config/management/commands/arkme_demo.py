"""Create (or refresh) the demo world and print its handles."""
from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...demo import demo_world


class Command(BaseCommand):
    help = "Create the demo world (idempotent) and print its ids and a working DSH key."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")
        parser.add_argument("--new-passwords", action="store_true",
                            help="Give every demo login a new random password (printed once).")
        parser.add_argument("--force", action="store_true",
                            help="Run even with DJANGO_DEBUG off (the demo world is for development).")

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.DEBUG and not options["force"]:
            raise CommandError("The demo world is for development: set DJANGO_DEBUG=1, or pass --force.")
        world = demo_world(new_passwords=options["new_passwords"])
        if options["json"]:
            self.stdout.write(json.dumps(world, ensure_ascii=False))
            return
        self.stdout.write("Demo world ready.")
        for section in ("accounts", "extensions", "groups", "image_refs"):
            for name, value in world[section].items():
                self.stdout.write(f"  {section[:-1]:<10} {name:<16} {value}")
        self.stdout.write(f"  workspace root {world['workspace_root']}")
        if world["logins"]:
            self.stdout.write("  web logins, shown only now (user / password): "
                              + ", ".join(f"{u} / {p}" for u, p in world["logins"].items()))
        else:
            self.stdout.write("  web logins unchanged (--new-passwords gives them new ones)")
        self.stdout.write("DSH key (new each run):")
        self.stdout.write(world["dsh_key"])

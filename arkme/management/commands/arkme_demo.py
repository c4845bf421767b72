"""Create (or refresh) the demo world and print its handles."""
from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from ...demo import demo_world


class Command(BaseCommand):
    help = "Create the demo world (idempotent) and print its ids and a working DSH key."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print one JSON object.")

    def handle(self, *args: Any, **options: Any) -> None:
        world = demo_world()
        if options["json"]:
            self.stdout.write(json.dumps(world, ensure_ascii=False))
            return
        self.stdout.write("Demo world ready.")
        for section in ("accounts", "extensions", "groups", "image_refs"):
            for name, value in world[section].items():
                self.stdout.write(f"  {section[:-1]:<10} {name:<16} {value}")
        self.stdout.write(f"  workspace root {world['workspace_root']}")
        self.stdout.write("  web logins (user / password): " + ", ".join(f"{u} / {p}" for u, p in world["logins"].items()))
        self.stdout.write("DSH key (new each run):")
        self.stdout.write(world["dsh_key"])

"""Inspect the tool catalog: check it, list a profile's tools, or export it as JSON."""
from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...catalog import CATALOG
from ...catalog_checks import validate_catalog
from ...metadata import Phase
from ...registrar import registrar
from ...results import output_schema


class Command(BaseCommand):
    help = "Check, list or export the tool catalog."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("check", help="Validate the catalog; exits non-zero on a problem.")
        listing = sub.add_parser("list", help="A table of the tools visible in a profile and phases.")
        listing.add_argument("--profile", default=None, help="Default: the default profile.")
        listing.add_argument("--phases", default="core,attachments", help="Comma-separated, e.g. core or core,attachments.")
        export = sub.add_parser("export", help="Export the catalog.")
        export.add_argument("--json", action="store_true", required=True)

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        if action == "check":
            problems = validate_catalog(CATALOG)
            for problem in problems:
                self.stderr.write(f"{problem.id}: {problem.message}")
            if problems:
                raise CommandError(f"The catalog has {len(problems)} problem(s).")
            self.stdout.write(f"The catalog is valid: {len(CATALOG.modules)} tools, {len(CATALOG.profiles)} profiles.")
        elif action == "list":
            self._list(options["profile"] or CATALOG.default_profile, options["phases"])
        else:
            self.stdout.write(json.dumps(self._export(), indent=2, ensure_ascii=False))

    def _list(self, profile: str, phases_arg: str) -> None:
        if profile not in CATALOG.profiles:
            raise CommandError(f"Unknown profile {profile!r}; one of {', '.join(CATALOG.profiles)}.")
        try:
            phases = {Phase(p.strip()) for p in phases_arg.split(",") if p.strip()} | {Phase.CORE}
        except ValueError as exc:
            raise CommandError("Phases are core and attachments.") from exc
        toolset = registrar.toolset(profile, phases)
        header = f"{'name':<34} {'id':<34} {'kind':<9} {'phase':<12} {'effect':<7} {'approval':<13}"
        self.stdout.write(header)
        self.stdout.write("-" * len(header))
        for tool in toolset.tools:
            m = tool.metadata
            self.stdout.write(f"{m.name:<34} {m.id:<34} {m.kind:<9} {m.phase:<12} {m.effect:<7} {m.approval:<13}")
        self.stdout.write(f"{len(toolset.tools)} tool(s) in profile {profile} with phases {','.join(sorted(phases))}.")

    def _export(self) -> dict[str, Any]:
        tools = []
        for module in CATALOG.modules:
            definition = module.definition()
            tools.append({
                "name": definition.name, "description": definition.description,
                "input_schema": definition.input_schema, "output_schema": output_schema(definition),
                "metadata": module.METADATA.as_dict(), "profiles": list(module.METADATA.profiles),
            })
        return {
            "tools": tools,
            "profiles": {name: sorted(kinds) for name, kinds in CATALOG.profile_kinds.items()},
            "default_profile": CATALOG.default_profile,
            "guidance": [{"key": g.key, "requires": list(g.requires), "text": g.text} for g in CATALOG.guidance],
        }

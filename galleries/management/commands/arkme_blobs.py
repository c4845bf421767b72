"""Operate on stored blobs: collect garbage, or verify every blob against its address."""
from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from ...blobs.services import blobs_collect_garbage, blobs_verify


class Command(BaseCommand):
    help = "Garbage-collect unreferenced blobs, or re-hash every stored blob."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        gc = sub.add_parser("gc", help="Delete unreferenced blobs older than the grace period.")
        gc.add_argument("--dry-run", action="store_true", help="Report what would be deleted.")
        sub.add_parser("verify", help="Re-hash every stored blob and report mismatches.")

    def handle(self, *args: Any, action: str, **options: Any) -> None:
        if action == "gc":
            dry = options["dry_run"]
            report = blobs_collect_garbage(dry_run=dry)
            verb = "Would delete" if dry else "Deleted"
            self.stdout.write(
                f"{verb} {len(report.blobs)} blob(s), {len(report.orphans)} orphan object(s) "
                f"and {len(report.staging)} stale staging object(s)."
            )
            return
        verified = blobs_verify(progress=self._progress)
        if sys.stderr.isatty():
            self.stderr.write("")
        for sha in verified.missing:
            self.stderr.write(f"missing:  {sha}")
        for sha in verified.mismatched:
            self.stderr.write(f"mismatch: {sha}")
        problems = len(verified.missing) + len(verified.mismatched)
        self.stdout.write(f"{verified.checked} blob(s) checked: {len(verified.mismatched)} mismatched, {len(verified.missing)} missing.")
        if problems:
            raise CommandError(f"{problems} problem(s) found.")

    def _progress(self, done: int, total: int) -> None:
        width = 30
        filled = width * done // max(total, 1)
        self.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total}", ending="")

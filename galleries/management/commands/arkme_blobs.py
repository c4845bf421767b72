"""Operate on stored blobs: collect garbage, or verify every blob against its address."""
from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError

from ...blobs.services import blobs_collect_garbage, blobs_verify


class Command(BaseCommand):
    help = "Garbage-collect unreferenced blobs, or re-hash every stored blob."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        gc = sub.add_parser("gc", help="Delete unreferenced blobs older than the grace period.")
        gc.add_argument("--dry-run", action="store_true", help="Report what would be deleted.")
        sub.add_parser("verify", help="Re-hash every stored blob and report mismatches.")

    def handle(self, *args, action: str, **options):
        if action == "gc":
            dry = options["dry_run"]
            report = blobs_collect_garbage(dry_run=dry)
            verb = "Would delete" if dry else "Deleted"
            self.stdout.write(
                f"{verb} {len(report.blobs)} blob(s), {len(report.orphans)} orphan object(s) "
                f"and {len(report.staging)} stale staging object(s)."
            )
            return
        report = blobs_verify(progress=self._progress)
        if sys.stderr.isatty():
            self.stderr.write("")
        for sha in report.missing:
            self.stderr.write(f"missing:  {sha}")
        for sha in report.mismatched:
            self.stderr.write(f"mismatch: {sha}")
        problems = len(report.missing) + len(report.mismatched)
        self.stdout.write(f"{report.checked} blob(s) checked: {len(report.mismatched)} mismatched, {len(report.missing)} missing.")
        if problems:
            raise CommandError(f"{problems} problem(s) found.")

    def _progress(self, done: int, total: int) -> None:
        width = 30
        filled = width * done // max(total, 1)
        self.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total}", ending="")

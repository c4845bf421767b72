"""Tests that need a service: skipped with a reason outside CI, failed inside it."""
from __future__ import annotations

import os

import pytest

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def require_service(name: str, available: bool, reason: str) -> None:
    """Outside CI a missing service skips with a reason; inside CI it fails the run."""
    if available:
        return
    if IN_CI:
        pytest.fail(f"{name} is required in CI: {reason}")
    pytest.skip(f"{name} unavailable: {reason}")

"""``ARKME_RATE_LIMITS``: its rules, its defaults, and what stops start-up."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from config.environment import DEFAULT_RATE_LIMITS, parse_rate_limits, rate_limits

ROOT = Path(__file__).resolve().parents[2]


def test_rules_are_tool_calls_period_and_scope():
    assert parse_rate_limits(" arkme_group_member_add=20/hour/account , *=600/minute/client,"
                             "arkme_context=5/second/session,arkme_context=1000/day/session") == (
        ("arkme_group_member_add", 20, 3600, "account"), ("*", 600, 60, "client"),
        ("arkme_context", 5, 1, "session"), ("arkme_context", 1000, 86400, "session"))


@pytest.mark.parametrize("text", ["", "  ", "off", "OFF"])
def test_empty_or_off_turns_limits_off(text):
    assert parse_rate_limits(text) == ()


@pytest.mark.parametrize(("text", "says"), [
    ("arkme_context", "is not TOOL=N/PERIOD/SCOPE"),
    ("arkme_context=5/minute", "is not TOOL=N/PERIOD/SCOPE"),
    ("arkme_context=5/minute/account/extra", "is not TOOL=N/PERIOD/SCOPE"),
    ("Arkme-Context=5/minute/account", "is not TOOL=N/PERIOD/SCOPE"),
    ("arkme_context=0/minute/account", "N must be a whole number of at least 1"),
    ("arkme_context=-1/minute/account", "N must be a whole number of at least 1"),
    ("arkme_context=1.5/minute/account", "N must be a whole number of at least 1"),
    ("arkme_context=5/fortnight/account", "PERIOD must be one of second, minute, hour, day"),
    ("arkme_context=5/minutes/account", "PERIOD must be one of second, minute, hour, day"),
    ("arkme_context=5/minute/user", "SCOPE must be one of client, account, session"),
    ("arkme_context=5/minute/account,", "is not TOOL=N/PERIOD/SCOPE"),
    ("arkme_context=5/minute/account,arkme_context=9/minute/account", "already has a limit for this period"),
])
def test_a_rule_that_cannot_be_read_is_refused_naming_it(text, says):
    with pytest.raises(ValueError, match=says):
        parse_rate_limits(text)


def test_unset_means_the_defaults_and_set_replaces_them(monkeypatch):
    monkeypatch.delenv("ARKME_RATE_LIMITS", raising=False)
    assert rate_limits() == parse_rate_limits(DEFAULT_RATE_LIMITS)
    assert {rule[0] for rule in rate_limits()} == {
        "arkme_group_member_add", "arkme_id_change", "arkme_extension_preview_add",
        "arkme_extension_preview_delete", "arkme_extension_preview_reorder"}
    monkeypatch.setenv("ARKME_RATE_LIMITS", "")
    assert rate_limits() == ()
    monkeypatch.setenv("ARKME_RATE_LIMITS", "*=10/second/client")
    assert rate_limits() == (("*", 10, 1, "client"),)


def _start(**env: str) -> subprocess.CompletedProcess:
    """``django.setup()`` in a fresh interpreter, as a web process starts."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("ARKME_RATE_LIMIT")}
    return subprocess.run([sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, capture_output=True,
                          text=True, env={**base, "DJANGO_SETTINGS_MODULE": "config.settings",
                                          "DJANGO_SECRET_KEY": "x", **env})


@pytest.mark.parametrize(("env", "says"), [
    ({"ARKME_RATE_LIMITS": "arkme_context=5/minute/everyone"},
     "ARKME_RATE_LIMITS: 'arkme_context=5/minute/everyone': SCOPE must be one of client, account, session"),
    ({"ARKME_RATE_LIMITS": "arkme_context=5/minute/account,arkme_made_up=1/day/client"},
     "ARKME_RATE_LIMITS names tools the catalog does not have: arkme_made_up"),
    ({"ARKME_RATE_LIMIT_TIMEOUT_SECONDS": "0"}, "ARKME_RATE_LIMIT_TIMEOUT_SECONDS must be more than 0"),
])
def test_bad_limits_stop_start_up(env, says):
    done = _start(**env)
    assert done.returncode != 0 and f"ImproperlyConfigured: {says}" in done.stderr, done.stderr[-2000:]


def test_good_limits_start():
    done = _start(ARKME_RATE_LIMITS="arkme_context=5/minute/account,*=600/minute/client")
    assert done.returncode == 0, done.stderr[-2000:]

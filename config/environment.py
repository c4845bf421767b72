"""Reading the environment for the settings (``config/settings.py`` is their only caller): a
variable that is set but not of its kind stops start-up with a message naming it."""
from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

_T = TypeVar("_T")


def env_bool(name: str, default: bool = False) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    return raw.strip().lower() in {"1", "true", "yes", "on"}


def env_parsed(name: str, default: _T, parse: Callable[[str], _T], kind: str) -> _T:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return parse(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be {kind}") from exc


def env_int(name: str, default: int, *, minimum: int = 1) -> int:
    value = env_parsed(name, default, int, "a whole number")
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}")
    return value


def env_seconds(name: str, default: float, *, maximum: float) -> float:
    value = env_parsed(name, default, float, "a number of seconds")
    if not 0 <= value <= maximum:  # NaN fails this too
        raise ImproperlyConfigured(f"{name} must be between 0 and {maximum:g}")
    return value


def env_names(name: str) -> tuple[str, ...]:
    """A comma-separated list of names, each once, in order (blank items ignored); ``*`` stands
    alone. What the names may be is checked by whoever reads them (at start-up)."""
    names = tuple(dict.fromkeys(part.strip() for part in os.environ.get(name, "").split(",") if part.strip()))
    if "*" in names and len(names) > 1:
        raise ImproperlyConfigured(f"{name} must be * alone or a list of names")
    return names


def env_path(name: str, default: Path) -> Path:
    raw = os.environ.get(name, "").strip()
    return Path(raw).resolve() if raw else default


def database_pool() -> dict[str, object] | None:
    """psycopg's connection pool for PostgreSQL (Django's ``OPTIONS["pool"]``), or ``None``
    with ``DATABASE_POOL_MAX_SIZE=0``.

    A request takes a connection at its first query and gives it back when it ends, so a
    process holds as many connections as it has requests using the database at that moment,
    whatever number of client connections it keeps open (gunicorn.conf.py). A request that
    finds every connection taken waits at most ``DATABASE_POOL_TIMEOUT`` (well inside the
    request budget), then answers 503 ``database_unavailable``."""
    max_size = env_int("DATABASE_POOL_MAX_SIZE", 10, minimum=0)
    if not max_size:
        return None
    min_size = env_int("DATABASE_POOL_MIN_SIZE", 2, minimum=0)
    if min_size > max_size:
        raise ImproperlyConfigured("DATABASE_POOL_MIN_SIZE must be at most DATABASE_POOL_MAX_SIZE")
    timeout = env_seconds("DATABASE_POOL_TIMEOUT", 10, maximum=60)
    if timeout <= 0:
        raise ImproperlyConfigured("DATABASE_POOL_TIMEOUT must be more than 0")
    return {"min_size": min_size, "max_size": max_size, "timeout": timeout, "name": "arkme"}


def databases(var_dir: Path) -> dict[str, dict[str, Any]]:
    """``DATABASES``: ``DATABASE_URL`` (SQLite under ``var_dir`` by default), tuned per engine."""
    default: dict[str, Any] = dict(dj_database_url.config(
        env="DATABASE_URL",
        default=f"sqlite:///{var_dir / 'arkme.sqlite3'}",
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 0, minimum=0),
    ))
    if default["ENGINE"] == "django.db.backends.sqlite3":
        Path(default["NAME"]).parent.mkdir(parents=True, exist_ok=True)
        # Concurrent requests on the embedded default: WAL lets readers go on beside a writer, a
        # writer waits for the lock (busy timeout) instead of failing, and every transaction takes
        # the write lock when it begins (IMMEDIATE), so none fails upgrading a read lock midway,
        # which SQLite answers at once with "database is locked" whatever the timeout.
        default.setdefault("OPTIONS", {}).update({
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        })
    elif default["ENGINE"] == "django.db.backends.postgresql":
        # Parameters bound by the server let psycopg prepare a statement after its fifth run on
        # a connection, so the hot reads (the session, the candidates) are planned once per
        # connection instead of on every call; see docs/PERFORMANCE.md.
        # DATABASE_PREPARE_THRESHOLD=0 turns this off (for a pooler that cannot keep prepared
        # statements, such as PgBouncer in transaction mode before 1.21).
        prepare_threshold = env_int("DATABASE_PREPARE_THRESHOLD", 5, minimum=0)
        if prepare_threshold:
            default.setdefault("OPTIONS", {}).update(
                {"server_side_binding": True, "prepare_threshold": prepare_threshold})
        # A database that refuses, drops or stops answering is a 503 within the request budget
        # (arkme/kernel/outages.py), not a request that waits until its worker is killed: a
        # connection attempt (the pool's too) gives up after DATABASE_CONNECT_TIMEOUT seconds, a
        # sent query whose bytes the network never acknowledges after tcp_user_timeout, and a
        # statement, lock waits included, after DATABASE_STATEMENT_TIMEOUT seconds (0: none, for a
        # pooler that refuses the startup option; ``migrate`` lifts it for itself, config/apps.py).
        options = default.setdefault("OPTIONS", {})
        options.setdefault("connect_timeout", env_int("DATABASE_CONNECT_TIMEOUT", 3, minimum=1))
        options.setdefault("tcp_user_timeout", 10_000)
        statement_timeout = env_int("DATABASE_STATEMENT_TIMEOUT", 20, minimum=0)
        if statement_timeout:
            options["options"] = f"{options.get('options', '')} -c statement_timeout={statement_timeout}s".strip()
        pool = database_pool()
        if pool:
            default["OPTIONS"] = {**default.get("OPTIONS", {}), "pool": pool}
            # The pool keeps the connections (Django requires CONN_MAX_AGE=0 with it, so
            # DATABASE_CONN_MAX_AGE applies without the pool only), and checks each one as it hands
            # it out: after a restart of PostgreSQL no request gets one of the dead connections.
            # The check is psycopg's, a round trip: a check that only asked the socket whether
            # PostgreSQL's goodbye had come handed out connections it was about to end
            # (docs/PERFORMANCE.md, "The pool's check without a round trip").
            default.update({"CONN_MAX_AGE": 0, "CONN_HEALTH_CHECKS": True})
    return {"default": default}


# ``ARKME_RATE_LIMITS``: what each limit's period is in seconds, and whose calls it counts.
RATE_PERIODS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
RATE_SCOPES = ("client", "account", "session")
_RATE_TOOL = re.compile(r"^(\*|[a-z][a-z0-9_]{0,63})$")
# Unset: the invitation tool and the other writes are limited per account, reads are not. A
# person approves each of these calls, so a normal session stays far below them; a host or a
# leaked key that loops does not.
DEFAULT_RATE_LIMITS = (
    "arkme_group_member_add=30/minute/account,arkme_group_member_add=300/hour/account,"
    "arkme_id_change=120/minute/account,arkme_extension_preview_add=120/minute/account,"
    "arkme_extension_preview_delete=120/minute/account,arkme_extension_preview_reorder=120/minute/account"
)
RATE_LIMITS_OFF = frozenset({"", "off"})


def parse_rate_limits(text: str) -> tuple[tuple[str, int, int, str], ...]:
    """Rules ``TOOL=N/PERIOD/SCOPE`` separated by commas, as ``(tool, n, period_seconds,
    scope)``; ``""`` or ``off``: none. Raises ``ValueError`` naming the rule it cannot read.
    Whether a tool is in the catalog is checked when the registry starts (the settings cannot
    import it)."""
    if text.strip().lower() in RATE_LIMITS_OFF:
        return ()
    rules: list[tuple[str, int, int, str]] = []
    for raw in text.split(","):
        rule = raw.strip()
        tool, equals, limit = rule.partition("=")
        parts = limit.strip().split("/")
        if not equals or len(parts) != 3 or not _RATE_TOOL.match(tool.strip()):
            raise ValueError(f"{rule!r} is not TOOL=N/PERIOD/SCOPE")
        count, period, scope = (part.strip() for part in parts)
        if not count.isdigit() or int(count) < 1:
            raise ValueError(f"{rule!r}: N must be a whole number of at least 1")
        if period not in RATE_PERIODS:
            raise ValueError(f"{rule!r}: PERIOD must be one of {', '.join(RATE_PERIODS)}")
        if scope not in RATE_SCOPES:
            raise ValueError(f"{rule!r}: SCOPE must be one of {', '.join(RATE_SCOPES)}")
        parsed = (tool.strip(), int(count), RATE_PERIODS[period], scope)
        if any((other[0], other[2], other[3]) == (parsed[0], parsed[2], parsed[3]) for other in rules):
            raise ValueError(f"{rule!r}: this tool already has a limit for this period and scope")
        rules.append(parsed)
    return tuple(rules)


def rate_limits() -> tuple[tuple[str, int, int, str], ...]:
    """``ARKME_RATE_LIMITS``: unset, the defaults; set empty or ``off``, no limits."""
    raw = os.environ.get("ARKME_RATE_LIMITS")
    try:
        return parse_rate_limits(DEFAULT_RATE_LIMITS if raw is None else raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"ARKME_RATE_LIMITS: {exc}") from exc

"""Agent sessions: opening, reading, the attachments phase, closing and purging."""
from __future__ import annotations

import functools
import re
from datetime import datetime, timedelta
from typing import Any, Iterable

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from arkme.accounts.models import Account
from arkme.accounts.selectors import account_by_public_id
from arkme.kernel.batches import pk_batches
from arkme.kernel.errors import ErrorCode, Forbidden, InvalidRequest, NotAuthenticated, NotFound
from arkme.kernel.profiles import Profile
from arkme.kernel.sql import column, default_db, field_of, from_row, hot_cursor, loaded, table

from .attachments import delete_attachments
from .clients import client_for_key, client_key_digest
from .models import AgentSession, CapturedAttachment, DshClient
from .signals import sessions_ended

WORKSPACE_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# What a DSH call reads of a session and its account; the rest stays in the database.
_SESSION_FIELDS = ("id", "public_id", "client_id", "account_id", "profile", "workspace", "attachments_mounted",
                   "last_seen_at", "closed_at")
_ACCOUNT = AgentSession._meta.get_field("account")
# Refreshing last_seen_at on every read would turn reads into writes.
TOUCH_INTERVAL = timedelta(seconds=60)
PURGE_BATCH = 1000


def _idle_cutoff(now: datetime | None = None) -> datetime:
    return (now or timezone.now()) - timedelta(seconds=settings.ARKME_SESSION_IDLE_SECONDS)


def session_open(*, client: DshClient, account: str, profile: str | None = None,
                 workspace: str | None = None) -> AgentSession:
    profile = profile or settings.ARKME_TOOL_PROFILE
    if profile not in Profile.__members__.values():
        raise InvalidRequest("Unknown profile.", code=ErrorCode.UNKNOWN_PROFILE, details={"fields": ["profile"]})
    if not client.may_use_profile(profile):
        raise Forbidden("This client may not open sessions in that profile.", code=ErrorCode.PROFILE_NOT_ALLOWED)
    if workspace is not None and not WORKSPACE_PATTERN.fullmatch(workspace):
        raise InvalidRequest(
            "A workspace is named by 1 to 64 letters, digits, _ or -.",
            code=ErrorCode.INVALID_WORKSPACE, details={"fields": ["workspace"]},
        )
    owner = account_by_public_id(account)
    return AgentSession.objects.create(client=client, account=owner, profile=profile, workspace=workspace or "")


@functools.cache
def _session_sql(vendor: str, keyed: bool, for_update: bool) -> str:
    """The read of ``session_for_client`` (``keyed``: of ``session_for_key``) as SQL written
    once per database vendor and form.

    Every DSH call runs it, and composing and compiling the join with the ORM cost 2.3 million
    instructions a call more than this (docs/ARCHITECTURE.md, "Private internals kept"). The
    account's two columns come back as ``account_public_id`` and ``account_is_active``.
    ``keyed`` finds the session by its client's key digest instead of the client's id: the key
    check and the session read in one statement. ``for_update`` locks the session's row (not
    the account's) where the database locks rows, for the writes that read it first.
    """
    session, account, client = table(AgentSession), table(Account), table(DshClient)
    fields = [field_of(AgentSession, name) for name in _SESSION_FIELDS]
    quote = connection.ops.quote_name
    columns = ", ".join(f"s.{column(AgentSession, field.name)} AS {quote(field.attname)}" for field in fields)
    sql = (
        # Identifiers come from the models' metadata; values are bound parameters.
        f"SELECT {columns}, a.{column(Account, 'public_id')} AS account_public_id,"  # noqa: S608
        f" a.{column(Account, 'is_active')} AS account_is_active"
        f" FROM {session} s JOIN {account} a ON a.{column(Account, 'id')} = s.{column(AgentSession, 'account')}"
    )
    if keyed:
        sql += (f" JOIN {client} c ON c.{column(DshClient, 'id')} = s.{column(AgentSession, 'client')}"
                f" WHERE c.{column(DshClient, 'key_hash')} = %s AND c.{column(DshClient, 'revoked_at')} IS NULL")
    else:
        sql += f" WHERE s.{column(AgentSession, 'client')} = %s"
    sql += f" AND s.{column(AgentSession, 'public_id')} = %s"
    if for_update and connection.features.has_select_for_update_of:
        sql += " FOR UPDATE OF s"
    return sql


def _session_row(client: DshClient | None, public_id: str, key_hash: str = "", *,
                 for_update: bool = False) -> AgentSession | None:
    """The session with its account attached, checked (``_checked``: its one 404, its touch),
    or None when no row matches. The touch goes out on the cursor that read the row, as its
    second statement: the stale read is the session view's most common write."""
    db = default_db()
    sql = _session_sql(db.vendor, client is None, for_update)
    params: list[str | int] = [key_hash if client is None else client.pk, public_id]
    with hot_cursor() as cursor:
        # A cursor, not Model.objects.raw(): this runs on every DSH call, and the raw query set
        # cost more to set up than the statement does to run (docs/PERFORMANCE.md).
        cursor.execute(sql, params)
        row = cursor.fetchone()
        if row is None:
            return None
        session = from_row(AgentSession, _SESSION_FIELDS, row[:len(_SESSION_FIELDS)], db)
        # The account as select_related attaches it (into the relation's cache, not through the
        # descriptor, whose checks cost more than the rest: docs/ARCHITECTURE.md, "Private
        # internals kept"), with only these columns loaded.
        active = bool(row[-1])
        _ACCOUNT.set_cached_value(session, loaded(Account, db.alias, ("id", "public_id", "is_active"),
                                                  (session.account_id, row[-2], active)))
        return _checked(session, active, cursor)


@functools.cache
def _touch_sql(vendor: str) -> str:
    return (f"UPDATE {table(AgentSession)} SET {column(AgentSession, 'last_seen_at')} = %s"  # noqa: S608
            f" WHERE {column(AgentSession, 'id')} = %s")


def session_for_client(client: DshClient, public_id: str, *, for_update: bool = False) -> AgentSession:
    """The client's own open, unexpired session; anything else is one indistinguishable 404.
    ``for_update``: its row locked until the caller's transaction ends."""
    session = _session_row(client, str(public_id), for_update=for_update)
    if session is None:
        raise unknown_session()
    return session


def session_for_key(key: str, public_id: str) -> tuple[DshClient, AgentSession]:
    """The client a key names and its session, read in one statement; ``NotAuthenticated``
    for a key that names no active client, else ``session_for_client``'s one 404."""
    key_hash = client_key_digest(key)
    session = _session_row(None, str(public_id), key_hash) if key_hash else None
    if session is None:
        client = client_for_key(key)
        if client is None:
            raise NotAuthenticated("The client key is not valid.")
        return client, session_for_client(client, public_id)
    # Only the id: the call needs no more of the client than whose it is.
    return loaded(DshClient, str(session._state.db), ("id",), (session.client_id,)), session


def unknown_session() -> NotFound:
    """The one 404 for any session a client may not use: none, another client's, closed, idle,
    or its account's deactivated."""
    return NotFound("No such session.", code=ErrorCode.UNKNOWN_SESSION)


def _checked(session: AgentSession, account_active: bool, cursor: Any) -> AgentSession:
    """The session's checks on the row just read (the unique key found it), and its touch on
    ``cursor`` when it was last seen more than ``TOUCH_INTERVAL`` ago."""
    now = timezone.now()
    if session.closed_at is not None or session.last_seen_at < _idle_cutoff(now) or not account_active:
        raise unknown_session()
    if now - session.last_seen_at > TOUCH_INTERVAL:
        cursor.execute(_touch_sql(cursor.db.vendor), [cursor.db.ops.adapt_datetimefield_value(now), session.id])
        session.last_seen_at = now
    return session


def session_set_attachments(*, client: DshClient, public_id: str, mounted: bool) -> AgentSession:
    """Mount or dispose the attachments dependency; idempotent either way."""
    with transaction.atomic(durable=True):
        session = session_for_client(client, public_id, for_update=True)
        if session.attachments_mounted != mounted:
            session.attachments_mounted = mounted
            session.save(update_fields=["attachments_mounted"])
    return session


def _attachment_keys(session_ids: Iterable[int]) -> list[str]:
    return list(
        CapturedAttachment.objects.filter(message__session_id__in=session_ids).values_list("storage_key", flat=True)
    )


def _end_sessions(session_ids: list[int]) -> int:
    """Close sessions and remove their captured attachments once the close has committed."""
    if not session_ids:
        return 0
    keys = _attachment_keys(session_ids)
    CapturedAttachment.objects.filter(message__session_id__in=session_ids).delete()
    closed = AgentSession.objects.filter(pk__in=session_ids, closed_at__isnull=True).update(closed_at=timezone.now())
    sessions_ended.send(sender=AgentSession, session_ids=session_ids)
    transaction.on_commit(lambda: delete_attachments(keys))
    return closed


def session_close(*, client: DshClient, public_id: str) -> None:
    with transaction.atomic(durable=True):
        session = session_for_client(client, public_id, for_update=True)
        _end_sessions([session.pk])


def session_is_live(session_pk: int) -> bool:
    """Open and not idle: what a session must be for its calls to be answered."""
    return AgentSession.objects.filter(pk=session_pk, closed_at__isnull=True, last_seen_at__gte=_idle_cutoff()).exists()


def sessions_purge(*, batch_size: int = PURGE_BATCH) -> int:
    """Close idle sessions and drop the attachments of every ended one. Returns sessions closed.

    Each batch is its own transaction: a statement's parameters stay far below the database's
    limits (PostgreSQL takes at most 65,535), a failure loses only its batch, and the next run
    goes on from what is left.
    """
    closed = 0
    idle = AgentSession.objects.filter(closed_at__isnull=True, last_seen_at__lt=_idle_cutoff())
    for batch in pk_batches(idle, batch_size):
        with transaction.atomic(durable=True):
            closed += _end_sessions(batch)
    # Attachments of sessions closed earlier whose storage delete did not go through.
    leftover = AgentSession.objects.filter(closed_at__isnull=False, messages__attachments__isnull=False).distinct()
    for batch in pk_batches(leftover, batch_size):
        with transaction.atomic(durable=True):
            keys = _attachment_keys(batch)
            CapturedAttachment.objects.filter(message__session_id__in=batch).delete()
            transaction.on_commit(functools.partial(delete_attachments, keys))
    return closed

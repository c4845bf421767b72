"""Floor views for the web figures: the least a view can do to give the product's answer.

Each is a DRF view (the product is a DRF service) that does the required work of one
product path and nothing between: the bearer key checked and the session read in one raw
SQL statement, the same checks on the row (closed, idle, inactive account), the same
touch write when the row is stale, the compiled toolset from the same cache, the same
statements' worth of reads as raw SQL, the same signing, the same audit row (the product's
statement, written before the answer as the product's is) and, with an
``Idempotency-Key``, the same claim and completion writes, on the product's kept cursor
(``hot_cursor``) as the product's statements are. No serializer, catalog look-up
by class, Port, tracing span or metric.

``tests/bench/test_web_floors.py`` checks that each floor answers what the product answers.
"""
from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import connection
from django.http import HttpResponse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.utils.http import parse_etags
from jsonschema import Draft202012Validator

from arkme.accounts.models import Account
from arkme.conversations.models import AgentSession, DshClient
from arkme.kernel.ids import token_digest
from arkme.kernel.logs import current_request_id
from arkme.kernel.signing import handle_signer
from arkme.kernel.sql import hot_cursor
from galleries.models import Blob, Extension, Gallery, GalleryItem
from groups.models import Group, Membership
from toolregistry.api.base import DshApiView
from toolregistry.api.parsers import loads_strict
from toolregistry.arguments import arguments_digest, integral_numbers
from toolregistry.audit import insert_row as audit_insert
from toolregistry.metadata import Phase
from toolregistry.models import IdempotencyRecord
from toolregistry.registrar import registrar
from toolregistry.tools.system.arkme_context import INPUT_SCHEMA

TOUCH = timedelta(seconds=60)
_CONTEXT_ARGUMENTS = Draft202012Validator(INPUT_SCHEMA)


def _t(model: Any) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def _sql() -> dict[str, str]:
    """Written once per process, as the product writes its own."""
    session, account, client = _t(AgentSession), _t(Account), _t(DshClient)
    extension, gallery, item, blob = _t(Extension), _t(Gallery), _t(GalleryItem), _t(Blob)
    group, membership, record = _t(Group), _t(Membership), _t(IdempotencyRecord)
    return {
        "session": (
            f"SELECT s.id, s.public_id, s.profile, s.attachments_mounted, s.workspace, s.closed_at,"  # noqa: S608
            f" s.last_seen_at, s.client_id, a.id, a.public_id, a.is_active FROM {session} s"
            f" JOIN {account} a ON a.id = s.account_id JOIN {client} c ON c.id = s.client_id"
            " WHERE c.key_hash = %s AND c.revoked_at IS NULL AND s.public_id = %s"),
        "touch": f"UPDATE {session} SET last_seen_at = %s WHERE id = %s",  # noqa: S608
        "account": f"SELECT display_name, arkme_id, arkme_id_changed_at FROM {account} WHERE id = %s",  # noqa: S608
        "extensions": (
            f"SELECT e.public_id, e.name, g.revision, i.public_id, i.position, b.width, b.height,"  # noqa: S608
            f" b.format, b.size FROM {extension} e JOIN {gallery} g ON g.extension_id = e.id"
            f" LEFT JOIN {item} i ON i.gallery_id = g.id LEFT JOIN {blob} b ON b.id = i.blob_id"
            " WHERE e.owner_id = %s ORDER BY e.id, i.position"),
        "groups": (
            f"SELECT g.name, g.public_id FROM {group} g WHERE g.id IN"  # noqa: S608
            f" (SELECT group_id FROM {membership} WHERE account_id = %s) ORDER BY g.id"),
        "claim": (
            f"INSERT INTO {record} (client_id, session_id, key, tool_name, request_digest, status,"  # noqa: S608
            " created_at) VALUES (%s, %s, %s, %s, %s, 'in_progress', %s) RETURNING id"),
        "complete": (
            f"UPDATE {record} SET status = 'complete', response_status = %s, response_body = %s"  # noqa: S608
            " WHERE id = %s"),
    }


_SQL: dict[str, str] = {}


def _statement(name: str) -> str:
    if not _SQL:
        _SQL.update(_sql())
    return _SQL[name]


def _error(status: int) -> HttpResponse:
    return HttpResponse(b'{"error":{"code":"floor","message":"floor"}}', status=status,
                        content_type="application/json")


def _session(request: Any, public_id: str) -> tuple | None:
    """The key check and the session read in one statement, the row's checks and the touch."""
    scheme, _, key = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
    if scheme.lower() != "bearer" or not key.startswith("dsh_"):
        return None
    with hot_cursor() as cursor:
        cursor.execute(_statement("session"), [token_digest(key), public_id])
        row = cursor.fetchone()
        if row is None:
            return None
        now = timezone.now()
        idle = now - timedelta(seconds=settings.ARKME_SESSION_IDLE_SECONDS)
        if row[5] is not None or _aware(row[6]) < idle or not row[10]:
            return None
        if now - _aware(row[6]) > TOUCH:
            cursor.execute(_statement("touch"), [connection.ops.adapt_datetimefield_value(now), row[0]])
    return row


def _aware(value: Any) -> datetime:
    """PostgreSQL's driver returns aware datetimes; SQLite (the tests') naive ones or text."""
    if isinstance(value, str):
        value = parse_datetime(value)
    return value if timezone.is_aware(value) else timezone.make_aware(value, UTC)


def _toolset(row: tuple) -> Any:
    return registrar.toolset(row[2], [Phase.CORE, Phase.ATTACHMENTS] if row[3] else [Phase.CORE])


def _json(body: Any) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


class FloorSessionView(DshApiView):
    authentication_classes = ()
    permission_classes = ()

    def get(self, request: Any, session: str) -> HttpResponse:
        row = _session(request, session)
        if row is None:
            return _error(404)
        toolset = _toolset(row)
        etag = f'"{toolset.revision}"'
        tags = parse_etags(request.headers.get("If-None-Match", ""))
        if tags == ["*"] or etag in [tag.removeprefix("W/") for tag in tags]:
            response = HttpResponse(status=304)
        else:
            head = _json({"session": row[1], "profile": row[2]})[:-1].decode()
            response = HttpResponse(f"{head},{toolset.view_fragment}}}".encode(), content_type="application/json")
        response["ETag"] = etag
        return response


def _context(cursor: Any, row: tuple) -> dict[str, Any]:
    """arkme_context's result: the account, extensions with their galleries, groups with refs."""
    account_id, account_public_id = row[8], row[9]
    cursor.execute(_statement("account"), [account_id])
    display_name, arkme_id, changed_at = cursor.fetchone()
    cursor.execute(_statement("extensions"), [account_id])
    extensions: list[dict[str, Any]] = []
    capacity = settings.ARKME_GALLERY_CAPACITY
    for public_id, name, revision, item, position, width, height, fmt, size in cursor.fetchall():
        if not extensions or extensions[-1]["extension"] != public_id:
            extensions.append({"extension": public_id, "name": name, "gallery": {
                "extension": public_id, "revision": revision, "capacity": capacity, "items": []}})
        if item is not None:
            extensions[-1]["gallery"]["items"].append({"item": item, "position": position, "width": width,
                                                       "height": height, "format": fmt, "bytes": size})
    cursor.execute(_statement("groups"), [account_id])
    sign = handle_signer(f"arkme.groups.source_ref:{account_public_id}", "g")
    groups = [{"name": name, "source_ref": sign(public_id)} for name, public_id in cursor.fetchall()]
    return {"account": {"display_name": display_name, "arkme_id": arkme_id,
                        "arkme_id_changeable": changed_at is None},
            "extensions": extensions, "groups": groups}


class FloorContextView(DshApiView):
    """``arkme_context`` through execute, with or without an ``Idempotency-Key``."""

    authentication_classes = ()
    permission_classes = ()

    def post(self, request: Any, session: str) -> HttpResponse:
        started = time.monotonic()
        row = _session(request, session)
        if row is None:
            return _error(404)
        if _toolset(row).get("arkme_context") is None:
            return _error(404)
        # The product's JSON rules (no repeated key, NaN or deep nesting), as its parser applies them.
        arguments = loads_strict(request.body or b"{}").get("arguments")
        if not _CONTEXT_ARGUMENTS.is_valid(arguments):
            return _error(400)
        arguments = integral_numbers(arguments)  # the product's validation hands the tool ints
        key = request.headers.get("Idempotency-Key")
        with hot_cursor() as cursor:
            claim = None
            if key:
                cursor.execute(_statement("claim"), [
                    row[7], row[0], key, "arkme_context", arguments_digest("arkme_context", arguments),
                    connection.ops.adapt_datetimefield_value(timezone.now())])
                claim = cursor.fetchone()[0]
            body = {"result": _context(cursor, row)}
            if claim is not None:
                cursor.execute(_statement("complete"), [200, json.dumps(body), claim])
        audit_insert((
            row[0], row[1], "arkme_context", "arkme.context@1", "ok", 200,
            int((time.monotonic() - started) * 1000), False, "rest", current_request_id(),
            connection.ops.adapt_datetimefield_value(timezone.now()), None, None))
        return HttpResponse(_json(body), content_type="application/json")

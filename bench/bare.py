"""Baselines served beside the product.

``BareSessionView`` is the throughput baseline: a bare DRF view that checks the client key
and reads the session in one raw SQL statement. ``FloorCandidatesView`` is not a goal but a yardstick: the least a
candidates call can do under the same contract: the product's own statements and signing
(the key and the session in one statement, the group with membership and size and the
candidates in another, one signed ref each, the audit row written with the product's statement) and the arguments' schema, with none of its layers between (no
serializer, catalog, Port or execution bookkeeping). The product's candidates figure is
reported against it too.
"""
import time

from django.conf import settings
from django.db import connection
from django.utils import timezone
from jsonschema import Draft202012Validator
from rest_framework.response import Response

from arkme.accounts.models import AccountKey
from arkme.kernel.logs import current_request_id
from arkme.kernel.sql import hot_cursor
from groups.refs import candidate_ref_maker, read_source_ref
from groups.selectors import _IS_MEMBER, _candidates_sql
from toolregistry.api.base import DshApiView
from toolregistry.arguments import integral_numbers
from toolregistry.audit import insert_row as audit_insert
from toolregistry.tools.business.arkme_group_member_candidates import INPUT_SCHEMA

from .web_floors import _session as floor_session

_VALIDATOR = Draft202012Validator(INPUT_SCHEMA)


class BareSessionView(DshApiView):
    """The key and the session read in one raw statement; the session's two columns as JSON."""

    authentication_classes = ()
    permission_classes = ()

    def get(self, request, session):
        row = floor_session(request, session)
        return Response({"public_id": row[1], "profile": row[2]} if row else {}, status=200 if row else 404)


class FloorCandidatesView(DshApiView):
    authentication_classes = ()
    permission_classes = ()

    def post(self, request, session):
        started = time.monotonic()
        row = floor_session(request, session)  # the key and the session, one statement
        if row is None:
            return Response({}, status=404)
        arguments = request.data["arguments"]
        if not _VALIDATOR.is_valid(arguments):
            return Response({}, status=400)
        arguments = integral_numbers(arguments)  # the product's validation hands the tool ints
        account = AccountKey(row[8], row[9])
        group_id = read_source_ref(arguments["source_ref"], account_public_id=account.public_id)
        limit = arguments.get("limit", 50)
        side = [account.pk, settings.ARKME_CANDIDATE_RECENT_CHATS, True, limit + 1]
        with hot_cursor() as cursor:  # the group, membership, size and the candidates: one statement
            cursor.execute(_candidates_sql(connection.vendor, False), [account.pk, group_id, *side, *side, limit + 1])
            rows = cursor.fetchall()
        if not rows or not rows[0][_IS_MEMBER]:  # no such group, or not a member
            return Response({}, status=404 if not rows else 403)
        group = rows[0]
        found = [row[_IS_MEMBER + 1:] for row in rows[1:]]
        sign = candidate_ref_maker(account_public_id=account.public_id, group_public_id=group[1])
        body = {"result": {
            "group": {"name": group[2], "join_policy": group[3], "member_count": group[_IS_MEMBER - 1]},
            "candidates": [{"candidate_ref": sign(public_id), "display_name": name} for public_id, name in found[:limit]],
            "truncated": len(found) > limit,
        }}
        audit_insert((
            row[0], row[1], "arkme_group_member_candidates", "arkme.group_member.candidates@1", "ok", 200,
            int((time.monotonic() - started) * 1000), False, "rest", current_request_id(),
            connection.ops.adapt_datetimefield_value(timezone.now())))
        return Response(body)

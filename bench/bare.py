"""Baselines served beside the product.

``BareSessionView`` is the throughput baseline: a bare DRF view that checks the client key
and reads the session in one raw SQL statement. ``FloorCandidatesView`` is not a goal but a yardstick: the least a
candidates call can do under the same contract: the product's own statements and signing
(the session read, the group with membership and size, the candidate query, one signed ref
each, the audit row) and the arguments' schema, with none of its layers between (no
serializer, catalog, Port or execution bookkeeping). The product's candidates figure is
reported against it too.
"""
import time

from django.db import connection
from jsonschema import Draft202012Validator
from rest_framework.response import Response
from rest_framework.views import APIView

from arkme.accounts.models import AccountKey
from arkme.conversations.sessions import session_for_client
from groups.refs import candidate_ref_maker, read_source_ref
from groups.selectors import _group_for_member_sql, candidate_chats
from toolregistry.models import ToolCall
from toolregistry.tools.business.arkme_group_member_candidates import INPUT_SCHEMA

from .web_floors import _session as floor_session

_VALIDATOR = Draft202012Validator(INPUT_SCHEMA)


class BareSessionView(APIView):
    """The key and the session read in one raw statement; the session's two columns as JSON."""

    authentication_classes = ()
    permission_classes = ()

    def get(self, request, session):
        row = floor_session(request, session)
        return Response({"public_id": row[1], "profile": row[2]} if row else {}, status=200 if row else 404)


class FloorCandidatesView(APIView):
    def post(self, request, session):
        started = time.monotonic()
        row = session_for_client(request.user, session)
        arguments = request.data["arguments"]
        if not _VALIDATOR.is_valid(arguments):
            return Response({}, status=400)
        account = AccountKey(row.account_id, row.account.public_id)
        group_id = read_source_ref(arguments["source_ref"], account_public_id=account.public_id)
        with connection.cursor() as cursor:
            cursor.execute(_group_for_member_sql(connection.vendor), [account.pk, group_id])
            group = cursor.fetchone()
        limit = arguments.get("limit", 50)
        found = candidate_chats(account, type("GroupKey", (), {"pk": group[0]}), query=None, limit=limit)
        sign = candidate_ref_maker(account_public_id=account.public_id, group_public_id=group[1])
        body = {"result": {
            "group": {"name": group[2], "join_policy": group[3], "member_count": group[-1]},
            "candidates": [{"candidate_ref": sign(c["public_id"]), "display_name": c["other_name"]}
                           for c in found[:limit]],
            "truncated": len(found) > limit,
        }}
        ToolCall.objects.bulk_create([ToolCall(
            session_id=row.pk, tool_name="arkme_group_member_candidates", tool_id="", outcome="ok",
            http_status=200, duration_ms=int((time.monotonic() - started) * 1000), replayed=False)])
        return Response(body)

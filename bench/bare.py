"""Baselines served beside the product.

``BareSessionView`` is the throughput baseline: a bare DRF view that checks the client key
and reads the session in one raw SQL statement. ``FloorCandidatesView`` is the least a
candidates call can do under the same contract, and no framework: a plain Django view (no
DRF request, parser, negotiation or renderer), the body parsed by the product's strict JSON
rules and written by orjson, the product's statement shape (the key and the session in one
statement; the group with membership and size and the candidates, one-sided from the chat
partners, in another), one signed ref each, the audit row written with the product's
statement, and the arguments' schema; none of the product's layers between (no serializer,
catalog, Port or execution bookkeeping).
"""
import time

import orjson
from django.db import connection
from django.http import HttpResponse
from django.utils import timezone
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.csrf import csrf_exempt
from jsonschema import Draft202012Validator
from rest_framework.response import Response

from arkme.accounts.models import AccountKey
from arkme.kernel.logs import current_request_id
from arkme.kernel.sql import hot_cursor
from groups.refs import candidate_ref_maker, read_source_ref
from groups.selectors import _IS_MEMBER, _candidates_sql, candidates_params
from toolregistry.api.base import DshApiView
from toolregistry.api.parsers import loads_strict
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


@method_decorator(csrf_exempt, name="dispatch")
class FloorCandidatesView(View):
    def post(self, request, session):
        started = time.monotonic()
        row = floor_session(request, session)  # the key and the session, one statement
        if row is None:
            return HttpResponse(status=404)
        arguments = loads_strict(request.body or b"{}").get("arguments")
        if not _VALIDATOR.is_valid(arguments):
            return HttpResponse(status=400)
        arguments = integral_numbers(arguments)  # the product's validation hands the tool ints
        account = AccountKey(row[8], row[9])
        group_id = read_source_ref(arguments["source_ref"], account_public_id=account.public_id)
        limit = arguments.get("limit", 50)
        with hot_cursor() as cursor:  # the group, membership, size and the candidates: one statement
            cursor.execute(_candidates_sql(connection.vendor, False),
                           candidates_params(account.pk, group_id, query=None, limit=limit))
            rows = cursor.fetchall()
        if not rows or not rows[0][_IS_MEMBER]:  # no such group, or not a member
            return HttpResponse(status=404 if not rows else 403)
        group = rows[0]
        found = [row[_IS_MEMBER + 1:] for row in rows[1:]]
        sign = candidate_ref_maker(account_public_id=account.public_id, group_public_id=group[1])
        body = {"result": {
            "group": {"name": group[2], "join_policy": group[3], "member_count": group[_IS_MEMBER - 1]},
            "candidates": [{"candidate_ref": sign(public_id), "display_name": name} for public_id, name in found[:limit]],
            "truncated": len(found) > limit,
            "scope": "recent",
        }}
        audit_insert((
            row[0], row[1], "arkme_group_member_candidates", "arkme.group_member.candidates@1", "ok", 200,
            int((time.monotonic() - started) * 1000), False, "rest", current_request_id(),
            connection.ops.adapt_datetimefield_value(timezone.now()), None, None))
        return HttpResponse(orjson.dumps(body), content_type="application/json")

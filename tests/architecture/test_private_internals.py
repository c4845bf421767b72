"""What the product relies on below the libraries' documented surface, each kept for a gain
measured in instructions (docs/ARCHITECTURE.md, "Private internals kept"). Each test checks
that the library still has what is used and still behaves as relied upon, so an upgrade that
changes it fails here, by name, rather than somewhere inside a request."""
from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
from django.db import connection
from django.db.models.base import ModelState
from django.test import RequestFactory
from django.utils import timezone
from rest_framework.response import Response
from rest_framework.views import APIView

from arkme.accounts.models import Account
from arkme.conversations import selectors as conversation_selectors
from arkme.conversations import sessions
from arkme.conversations.models import AgentSession, DshClient, Message
from arkme.kernel.sql import from_row, loaded
from galleries import selectors as gallery_selectors
from galleries.models import Extension, Gallery, PendingOperation
from galleries.services import add_rows
from groups import selectors as group_selectors
from groups.models import Group
from toolregistry import idempotency
from toolregistry.api.base import DshApiView
from toolregistry.models import IdempotencyRecord

# --- arkme.kernel.sql.loaded: ModelState() and __dict__ writes instead of Model.from_db --------

LOADED = [
    (AgentSession, sessions._SESSION_FIELDS),
    (Account, ("id", "public_id", "is_active")),
    (DshClient, ("id",)),
    (IdempotencyRecord, idempotency._RECORD_FIELDS),
    (Group, group_selectors._GROUP_FIELDS),
    (Extension, gallery_selectors.EXTENSION_FIELDS),
    (Gallery, gallery_selectors.GALLERY_FIELDS),
    (PendingOperation, add_rows.OPERATION_FIELDS),
    (Message, conversation_selectors.MESSAGE_FIELDS),
]


@pytest.mark.parametrize(("model", "names"), LOADED, ids=[model.__name__ for model, _ in LOADED])
def test_django_builds_a_loaded_instance_as_loaded_writes_it(model, names):
    """``Model.from_db`` leaves a ``ModelState`` (not adding, on the alias) and one attribute per
    loaded attname, nothing else: what ``loaded`` writes directly for each model it builds."""
    values = tuple(f"value of {name}" for name in names)
    django, ours = model.from_db("default", names, values), loaded(model, "default", names, values)
    assert type(django._state) is ModelState and type(ours._state) is ModelState
    assert vars(django).keys() == vars(ours).keys() == {"_state", *names}
    assert {k: v for k, v in vars(django).items() if k != "_state"} == dict(zip(names, values, strict=True))
    assert (django._state.adding, django._state.db) == (ours._state.adding, ours._state.db) == (False, "default")
    assert vars(ours)["_state"] is not vars(django)["_state"]


@pytest.mark.django_db
def test_a_row_read_by_hand_converts_as_a_raw_query_set_does(dsh, world):
    """``from_row`` applies the database's converters to a cursor's row (``get_db_converters``
    of the backend and of the column), as ``Model.objects.raw()`` does: on SQLite a datetime
    comes back as text and must arrive as the field's value."""
    session = AgentSession.objects.create(client=dsh.client, account=world.alice, profile="business")
    names = sessions._SESSION_FIELDS
    sql = f"SELECT {', '.join(names)} FROM {AgentSession._meta.db_table} WHERE id = %s"  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(sql, [session.pk])
        row = cursor.fetchone()
    [raw] = AgentSession.objects.raw(sql, [session.pk])
    ours = from_row(AgentSession, names, row)
    assert {name: getattr(ours, name) for name in names} == {name: getattr(raw, name) for name in names}
    assert ours.last_seen_at == session.last_seen_at and ours.last_seen_at.tzinfo is not None


# --- arkme.conversations.sessions: ForeignKey.set_cached_value instead of the descriptor -------

@pytest.mark.django_db
def test_a_relation_cached_on_an_instance_is_read_without_a_query(world, django_assert_num_queries):
    field = AgentSession._meta.get_field("account")
    assert list(inspect.signature(field.set_cached_value).parameters) == ["instance", "value"]
    session = AgentSession(account_id=world.alice.pk, last_seen_at=timezone.now())
    field.set_cached_value(session, world.alice)
    assert field.is_cached(session)
    with django_assert_num_queries(0):
        assert session.account is world.alice


# --- toolregistry.api.base.DshApiView.dispatch: the view's attributes cleared -----------------

def _probe(base: type[APIView], seen: list[APIView]) -> type[APIView]:
    class Probe(base):  # type: ignore[valid-type, misc]
        authentication_classes: list[type] = []
        permission_classes: list[type] = []

        def get(self, request: object) -> Response:
            seen.append(self)
            return Response({"ok": True})

    return Probe


def test_drf_ties_a_view_to_its_request_and_response_in_reference_cycles():
    """The cycles ``DshApiView.dispatch`` breaks. Should DRF and Django stop making them, the
    clearing is no longer needed and this test says so."""
    seen: list[APIView] = []
    response = _probe(APIView, seen).as_view()(RequestFactory().get("/probe")).render()
    view = seen[0]
    assert view.request.parser_context["view"] is view
    assert view.request.parser_context["request"] is view.request
    assert response.renderer_context["view"] is view and response.renderer_context["response"] is response
    assert vars(view)["head"].__self__ is view  # Django's head = get, a bound method
    assert view.response is response


def test_nothing_reads_a_dsh_view_after_its_dispatch_returns():
    """``as_view()``'s function returns what ``dispatch`` returns and touches the view no more,
    so the view's attributes may be cleared there; the response is rendered by then."""
    seen: list[APIView] = []
    response = _probe(DshApiView, seen).as_view()(RequestFactory().get("/probe"))
    assert response.status_code == 200 and response.is_rendered and response.content == b'{"ok":true}'
    assert vars(seen[0]) == {} and response.renderer_context is None


# --- arkme.kernel.sql.execute_custom_plan: psycopg's execute(prepare=False) --------------------

def test_a_statement_can_be_sent_unprepared_through_djangos_cursor():
    psycopg = pytest.importorskip("psycopg")
    assert "prepare" in inspect.signature(psycopg.Cursor.execute).parameters
    from django.db.backends.utils import CursorWrapper

    assert {"cursor", "db"} <= set(inspect.signature(CursorWrapper.__init__).parameters)
    assert hasattr(connection, "wrap_database_errors")


@pytest.mark.postgres
def test_an_unprepared_statement_runs_on_postgresql(postgres):
    from arkme.kernel.sql import execute_custom_plan, hot_cursor

    with hot_cursor() as cursor:
        execute_custom_plan(cursor, "SELECT %s::int + 1", [41])
        assert cursor.fetchone() == (42,)


# --- the list itself -----------------------------------------------------------------------------

def test_every_pin_the_architecture_document_names_exists():
    """docs/ARCHITECTURE.md's "Private internals kept" names a test for each; each is here."""
    root = Path(__file__).resolve().parents[2]
    text = (root / "docs" / "ARCHITECTURE.md").read_text()
    section = text.split("## Private internals kept", 1)[1].split("\n## ", 1)[0]
    named = 0
    for cell in section.split("|"):
        file = None
        for ref in re.findall(r"`((?:tests/[\w/]+\.py)?(?:::\w+)?)`", cell):
            path, _, test = ref.partition("::")
            file = root / path if path else file
            assert file is not None and file.exists(), ref
            assert not test or re.search(rf"^def {test}\(", file.read_text(), re.MULTILINE), ref
            named += 1
    assert named >= 10

"""Every staff page answers in a number of statements that does not grow with the group, the
chat, the session, the gallery or the audit, and can be saved at any size."""
from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from arkme.accounts.models import Account
from arkme.conversations.models import AgentSession, Message
from galleries.models import Blob
from groups.models import ChatMessage, Group, Membership
from toolregistry.models import ToolCall

SMALL, LARGE = 50, 5000


def statements(staff, url: str) -> tuple[int, list[str]]:
    staff.get(url)  # warm: the first request of a test also reads the signed-in session and caches
    with CaptureQueriesContext(connection) as queries:
        response = staff.get(url)
    assert response.status_code == 200, url
    return len(queries), [query["sql"] for query in queries.captured_queries]


def grow_group(group: Group, to: int) -> None:
    have = group.memberships.count()
    people = Account.objects.bulk_create([Account(display_name=f"Member {group.pk}-{n}") for n in range(have, to)])
    Membership.objects.bulk_create([Membership(group=group, account=person) for person in people])


def test_a_group_page_does_not_grow_with_its_members_and_saves_at_5000(staff, world):
    group = world.open_group
    url = f"/admin/groups/group/{group.pk}/change/"
    grow_group(group, SMALL)
    small, _ = statements(staff, url)
    grow_group(group, LARGE)
    large, _ = statements(staff, url)
    assert small == large
    saved = staff.post(url, {"name": "renamed", "join_policy": "open"})
    assert saved.status_code == 302
    group.refresh_from_db()
    assert group.name == "renamed" and group.memberships.count() == LARGE
    members, _ = statements(staff, f"/admin/groups/membership/?group__id__exact={group.pk}")
    assert members < 15


def grow_chat(chat, sender, to: int) -> None:
    have = chat.messages.count()
    ChatMessage.objects.bulk_create([ChatMessage(chat=chat, sender=sender, text=f"message {n}")
                                     for n in range(have, to)])


def test_a_chat_page_does_not_grow_with_its_messages(staff, world):
    from groups.models import PrivateChat

    chat = PrivateChat.objects.first()
    url = f"/admin/groups/privatechat/{chat.pk}/change/"
    grow_chat(chat, world.alice, SMALL)
    small, _ = statements(staff, url)
    grow_chat(chat, world.alice, LARGE)
    assert statements(staff, url)[0] == small
    listing = f"/admin/groups/chatmessage/?chat__id__exact={chat.pk}"
    assert statements(staff, listing)[0] < 15


def test_a_session_page_does_not_grow_with_its_messages(staff, dsh, world):
    session = AgentSession.objects.get(public_id=dsh.open_session(world.alice)["session"])
    url = f"/admin/conversations/agentsession/{session.pk}/change/"

    def grow(to):
        have = session.messages.count()
        Message.objects.bulk_create([Message(session=session, message_id=f"m{n}", text="x") for n in range(have, to)])

    grow(SMALL)
    small, _ = statements(staff, url)
    grow(LARGE)
    assert statements(staff, url)[0] == small


def test_the_audit_list_does_not_grow_with_the_audit_and_never_counts_it_all(staff, dsh, world):
    session = AgentSession.objects.get(public_id=dsh.open_session(world.alice)["session"])

    def grow(to):
        have = ToolCall.objects.count()
        ToolCall.objects.bulk_create([
            ToolCall(session=session, session_public_id=session.public_id, tool_name="arkme_context",
                     outcome="ok" if n % 3 else "unknown_tool", http_status=200 if n % 3 else 404, duration_ms=1)
            for n in range(have, to)])

    for url in ("/admin/toolregistry/toolcall/", "/admin/toolregistry/toolcall/?outcome=errors",
                "/admin/toolregistry/toolcall/?tool=arkme_context"):
        grow(SMALL)
        small, _ = statements(staff, url)
        grow(LARGE)
        large, sql = statements(staff, url)
        assert small == large, url
        audit_sql = [q for q in sql if "toolregistry_toolcall" in q]
        assert not [q for q in audit_sql if "DISTINCT" in q.upper()]
        # Every count of the audit is bounded by a LIMIT inside it.
        assert all("LIMIT" in q.upper() for q in audit_sql if "COUNT(" in q.upper())
        ToolCall.objects.all().delete()


def test_gallery_and_blob_pages_do_not_grow_with_their_items(staff, gs, world):
    gs.add_confirmed(gs.write_many(1))
    pages = [f"/admin/galleries/extension/{world.alice_ext.pk}/change/",
             f"/admin/galleries/gallery/{world.alice_ext.gallery.pk}/change/",
             "/admin/galleries/extension/", "/admin/galleries/blob/"]
    small = [statements(staff, url)[0] for url in pages]
    gs.add_confirmed(gs.write_many(19, start=1))
    Blob.objects.bulk_create([Blob(sha256=f"{n:064x}", size=1, width=400, height=400, format="png",
                                   created_at=timezone.now()) for n in range(200)])
    assert [statements(staff, url)[0] for url in pages] == small

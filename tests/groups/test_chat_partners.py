"""Each private chat seen from both sides (ChatPartner), kept exact by the database (groups.0003)."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from arkme.accounts.models import Account
from groups.models import ChatPartner, PrivateChat
from groups.services import private_chat_ensure


def people(n: int, prefix: str = "P") -> list[Account]:
    return Account.objects.bulk_create([Account(display_name=f"{prefix}{i}", arkme_id=f"{prefix.lower()}{i:06d}x")
                                        for i in range(n)])


def kept() -> set[tuple[int, str, int, int, object]]:
    return set(ChatPartner.objects.values_list("chat_id", "chat_public_id", "person_id", "partner_id",
                                               "last_activity_at"))


def expected() -> set[tuple[int, str, int, int, object]]:
    rows = set()
    for chat in PrivateChat.objects.all():
        for person, partner in ((chat.account_low_id, chat.account_high_id),
                                (chat.account_high_id, chat.account_low_id)):
            rows.add((chat.pk, chat.public_id, person, partner, chat.last_activity_at))
    return rows


@pytest.mark.django_db
def test_every_way_of_writing_chats_keeps_both_sides_exact():
    me, *others = people(8)
    private_chat_ensure(a=me, b=others[0])  # the service
    PrivateChat.objects.create(account_low=me, account_high=others[1], last_activity_at=timezone.now())  # admin
    now = timezone.now()
    PrivateChat.objects.bulk_create([PrivateChat(account_low=me, account_high=p, last_activity_at=now)
                                     for p in others[2:]])  # a bulk load
    assert len(kept()) == 14 and kept() == expected()
    # The delivery of a message moves the chat's activity (groups.delivery).
    PrivateChat.objects.filter(account_high=others[3]).update(last_activity_at=now + timedelta(minutes=5))
    assert kept() == expected()
    spare = Account.objects.create(display_name="spare")
    with connection.cursor() as cursor:  # raw SQL moving a chat to another pair
        cursor.execute("UPDATE groups_privatechat SET account_high_id = %s WHERE account_high_id = %s",
                       [spare.pk, others[5].pk])
    assert kept() == expected()
    assert not ChatPartner.objects.filter(partner=others[5]).exists()
    PrivateChat.objects.filter(account_high=others[4]).delete()  # a queryset delete
    others[2].delete()  # an account deleted: its chats cascade
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM groups_privatechat WHERE account_high_id = %s", [others[1].pk])
    assert kept() == expected() and len(kept()) == 2 * PrivateChat.objects.count()


@pytest.mark.django_db(transaction=True)
def test_the_migration_fills_the_rows_from_the_chats_already_there():
    from django.core.management import call_command

    me, *others = people(4, prefix="M")
    now = timezone.now()
    PrivateChat.objects.bulk_create([PrivateChat(account_low=me, account_high=p,
                                                 last_activity_at=now - timedelta(seconds=i))
                                     for i, p in enumerate(others)])
    try:
        call_command("migrate", "groups", "0002", verbosity=0)
        with connection.cursor() as cursor:
            assert "groups_chatpartner" not in connection.introspection.table_names(cursor)
            # A chat written while the rows and their triggers did not exist.
            cursor.execute("UPDATE groups_privatechat SET last_activity_at = %s WHERE account_high_id = %s",
                           [now + timedelta(hours=1), others[0].pk])
        call_command("migrate", "groups", verbosity=0)
        assert len(kept()) == 2 * len(others) and kept() == expected()
        private_chat_ensure(a=me, b=Account.objects.create(display_name="after"))  # the triggers are back
        assert kept() == expected()
    finally:
        call_command("migrate", "groups", verbosity=0)

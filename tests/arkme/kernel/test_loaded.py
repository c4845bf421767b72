"""Model instances built from a hot-path row are those ``Model.from_db`` builds."""
from __future__ import annotations

import pytest
from django.db.models.signals import post_init

from arkme.accounts.models import Account
from arkme.conversations.models import AgentSession
from arkme.conversations.sessions import session_for_key
from arkme.kernel.sql import loaded

pytestmark = pytest.mark.django_db

NAMES = ("id", "public_id", "is_active")


def _same(ours, django) -> None:
    assert type(ours) is type(django)
    assert vars(ours).keys() == vars(django).keys()
    assert {k: v for k, v in vars(ours).items() if k != "_state"} == {
        k: v for k, v in vars(django).items() if k != "_state"}
    assert (ours._state.db, ours._state.adding) == (django._state.db, django._state.adding)
    assert ours.get_deferred_fields() == django.get_deferred_fields()


def test_an_instance_is_what_from_db_builds(world):
    values = (world.alice.pk, world.alice.public_id, True)
    ours = loaded(Account, "default", NAMES, values)
    _same(ours, Account.from_db("default", NAMES, values))
    # Deferred fields load on access and the instance saves as an update, as Django's would.
    assert ours.display_name == "Alice"
    ours.display_name = "Alicia"
    ours.save(update_fields=["display_name"])
    world.alice.refresh_from_db()
    assert world.alice.display_name == "Alicia"


def test_the_session_read_builds_the_same_instances(world, dsh):
    session = AgentSession.objects.create(client=dsh.client, account=world.alice, profile="business")
    client, read = session_for_key(dsh.key, session.public_id)
    assert client.pk == dsh.client.pk and read.pk == session.pk
    assert read.account.public_id == world.alice.public_id and read.account.pk == world.alice.pk
    assert read.get_deferred_fields() >= {"created_at"}
    assert read.account.get_deferred_fields() >= {"display_name"}


def test_a_model_with_post_init_receivers_goes_through_from_db():
    seen = []

    def receiver(sender, instance, **kwargs):
        seen.append(instance)

    post_init.connect(receiver, sender=Account)
    try:
        built = loaded(Account, "default", NAMES, (1, "x", True))
    finally:
        post_init.disconnect(receiver, sender=Account)
    assert len(seen) == 1 and seen[0] is built
    loaded(Account, "default", NAMES, (1, "x", True))
    assert len(seen) == 1  # the receiver is gone


def test_names_that_are_not_concrete_attnames_go_through_from_db():
    names, values = ("id", "nonsense"), (1, 2)
    built = loaded(Account, "default", names, values)
    assert "nonsense" not in vars(built)  # never written as an attribute
    _same(built, Account.from_db("default", names, values))

"""A session is read by one statement for a read and for a write alike; the write's form locks
the session's row (not its account's) until its transaction ends."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import DatabaseError, connection, transaction

from arkme.accounts.models import Account
from arkme.conversations.models import AgentSession
from arkme.conversations.sessions import session_for_client
from arkme.kernel.errors import NotFound


def _loaded(instance: object) -> dict[str, object]:
    return {k: v for k, v in vars(instance).items() if k != "_state"}


def test_a_write_reads_the_session_as_a_read_does(dsh, world):
    public_id = dsh.open_session(world.alice)["session"]
    with transaction.atomic():
        written = session_for_client(dsh.client, public_id, for_update=True)
    read = session_for_client(dsh.client, public_id)
    assert _loaded(written) == _loaded(read)
    assert _loaded(written.account) == _loaded(read.account) and written.account.pk == world.alice.pk


def test_a_write_to_another_clients_session_is_the_same_404(dsh, other_dsh, world):
    public_id = dsh.open_session(world.alice)["session"]
    with pytest.raises(NotFound), transaction.atomic():
        session_for_client(other_dsh.client, public_id, for_update=True)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_the_writes_read_locks_the_session_row_and_not_the_accounts(postgres, world):
    from tests.support.dsh import make_dsh

    dsh = make_dsh()
    public_id = dsh.open_session(world.alice)["session"]

    def try_lock(model: type, pk: int) -> bool:
        try:
            with transaction.atomic():
                model.objects.select_for_update(nowait=True).filter(pk=pk).exists()
            return True
        except DatabaseError:
            return False
        finally:
            connection.close()

    with transaction.atomic():
        session = session_for_client(dsh.client, public_id, for_update=True)
        with ThreadPoolExecutor(1) as other:  # another thread, another connection
            assert other.submit(try_lock, AgentSession, session.pk).result() is False
            assert other.submit(try_lock, Account, world.alice.pk).result() is True

"""Limits on tool calls: 429 ``throttled`` with ``Retry-After`` on REST, the same tool error over
MCP; a throttled call writes nothing and leaves its approval and its Idempotency-Key for the
retry; per account, per client and per session; the database's counters and Redis's; a store
that cannot be reached refuses writes and lets reads through."""
from __future__ import annotations

import pytest
from prometheus_client import REGISTRY

from groups.models import ChatMessage, Invitation, Membership
from tests.support.errors import assert_error, assert_tool_error
from tests.support.live import free_port
from tests.support.mcp import LEGACY, Mcp, accept
from toolregistry import limits
from toolregistry.models import ApprovalGrant, RateWindow, ToolCall

# Fixed windows of a minute, on a clock the test moves (the database store's).
NOW = 1_800_000_000.0


@pytest.fixture
def clock(monkeypatch):
    now = [NOW + 5]

    def advance(seconds: float) -> None:
        now[0] += seconds

    monkeypatch.setattr(limits, "clock", lambda: now[0])
    return advance


@pytest.fixture
def limited(settings, clock):
    """Set ``ARKME_RATE_LIMITS`` for the test, as parsed rules."""
    from config.environment import parse_rate_limits

    settings.ARKME_RATE_LIMIT_REDIS_URL = None

    def set_rules(text: str) -> None:
        settings.ARKME_RATE_LIMITS = parse_rate_limits(text)

    return set_rules


def throttled_count(tool: str, scope: str) -> float:
    return REGISTRY.get_sample_value("arkme_tool_calls_throttled_total", {"tool": tool, "scope": scope}) or 0


def test_rest_answers_429_throttled_with_retry_after_and_audits_it(dsh, session, limited, clock):
    limited("arkme_context=2/minute/account")
    before = throttled_count("arkme_context", "account")
    assert [dsh.execute(session, "arkme_context", {}).status_code for _ in range(2)] == [200, 200]
    clock(10)
    refused = dsh.execute(session, "arkme_context", {})
    error = assert_error(refused, 429, "throttled", details={"retry_after_seconds": 45})
    assert refused["Retry-After"] == "45" and "arkme_context" in error["message"]
    assert ToolCall.objects.filter(outcome="throttled", http_status=429, tool_name="arkme_context").count() == 1
    assert throttled_count("arkme_context", "account") == before + 1
    clock(45)  # the next window
    assert dsh.execute(session, "arkme_context", {}).status_code == 200


def test_a_refused_call_counts_against_no_limit(dsh, session, limited, clock):
    limited("arkme_context=1/minute/account,arkme_context=3/hour/account")
    assert dsh.execute(session, "arkme_context", {}).status_code == 200
    for _ in range(5):  # past the minute's limit: none of these counts against the hour's
        assert_error(dsh.execute(session, "arkme_context", {}), 429, "throttled")
    clock(60)
    assert dsh.execute(session, "arkme_context", {}).status_code == 200
    clock(60)
    assert dsh.execute(session, "arkme_context", {}).status_code == 200
    clock(60)  # the hour's three are spent: its window, not the minute's, says when
    error = assert_error(dsh.execute(session, "arkme_context", {}), 429, "throttled")
    assert error["details"]["retry_after_seconds"] == 3600 - 185


def test_invalid_arguments_are_refused_before_the_limits(dsh, session, limited):
    limited("arkme_context=1/minute/account")
    assert_error(dsh.execute(session, "arkme_context", {"bogus": 1}), 400, "invalid_arguments")
    assert dsh.execute(session, "arkme_context", {}).status_code == 200
    assert_error(dsh.execute(session, "arkme_made_up", {}), 404, "unknown_tool")


def test_account_scope_spans_clients_and_client_scope_spans_accounts(dsh, other_dsh, world, limited):
    alice_a = dsh.open_session(world.alice)["session"]
    alice_b = other_dsh.open_session(world.alice)["session"]
    bob_a = dsh.open_session(world.bob)["session"]
    limited("arkme_context=2/minute/account")
    assert dsh.execute(alice_a, "arkme_context", {}).status_code == 200
    assert other_dsh.execute(alice_b, "arkme_context", {}).status_code == 200
    assert_error(dsh.execute(alice_a, "arkme_context", {}), 429, "throttled")  # alice's, whichever client
    assert dsh.execute(bob_a, "arkme_context", {}).status_code == 200
    RateWindow.objects.all().delete()
    limited("*=2/minute/client")  # every tool together, per client
    assert dsh.execute(alice_a, "arkme_context", {}).status_code == 200
    # A call the tool refuses ran, and counts; the limit holds any tool, in any session of the client.
    assert_error(dsh.execute(bob_a, "arkme_group_member_candidates", {"source_ref": "x" * 20}), 400,
                 "invalid_source_ref")
    assert_error(dsh.execute(bob_a, "arkme_context", {}), 429, "throttled")
    assert other_dsh.execute(alice_b, "arkme_context", {}).status_code == 200


def test_session_scope_counts_each_session_apart(dsh, world, limited):
    first, second = (dsh.open_session(world.alice)["session"] for _ in range(2))
    limited("arkme_context=1/minute/session")
    assert dsh.execute(first, "arkme_context", {}).status_code == 200
    assert_error(dsh.execute(first, "arkme_context", {}), 429, "throttled")
    assert dsh.execute(second, "arkme_context", {}).status_code == 200


def test_a_throttled_invitation_sends_nothing_and_leaves_its_approval_for_later(
        dsh, session, refs, candidates, world, limited, clock, django_capture_on_commit_callbacks):
    from tests.support.groups import ref_of

    limited("arkme_group_member_add=1/minute/account")
    carol, dave = (ref_of(candidates, "approval-group", name) for name in ("Carol", "Dave"))
    first = {"source_ref": refs["approval-group"], "candidate_refs": [carol]}
    arguments = {"source_ref": refs["approval-group"], "candidate_refs": [dave]}
    # Approved while within the limit; the first call then uses the minute up.
    approval = dsh.pre_execute(session, "arkme_group_member_add", arguments).json()["approval"]
    with django_capture_on_commit_callbacks(execute=True):
        assert dsh.approve_and_execute(session, "arkme_group_member_add", first).status_code == 200
    invitations, messages = Invitation.objects.count(), ChatMessage.objects.count()
    members = Membership.objects.count()
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        assert_error(dsh.execute(session, "arkme_group_member_add", arguments, approval=approval), 429, "throttled")
    assert not callbacks  # nothing to deliver
    assert (Invitation.objects.count(), ChatMessage.objects.count(), Membership.objects.count()) == (
        invitations, messages, members)
    assert ApprovalGrant.objects.get(tool_name="arkme_group_member_add", used_at__isnull=True)
    clock(60)
    with django_capture_on_commit_callbacks(execute=True):
        done = dsh.execute(session, "arkme_group_member_add", arguments, approval=approval)
    assert done.status_code == 200, done.content
    assert [r["outcome"] for r in done.json()["result"]["results"]] == ["invited"]
    assert Invitation.objects.count() == invitations + 1
    assert not ApprovalGrant.objects.filter(used_at__isnull=True).exists()


def test_a_throttled_reorder_leaves_the_gallery_and_its_approval(gs, limited, clock):
    limited("arkme_extension_preview_reorder=1/minute/account")
    gallery = gs.add_confirmed(gs.write_many(3))["gallery"]
    items = [item["item"] for item in gallery["items"]]
    first = {"extension": gs.extension, "order": items[::-1], "revision": gallery["revision"]}
    again = {"extension": gs.extension, "order": items, "revision": gallery["revision"] + 1}
    approval = gs.dsh.pre_execute(gs.session, "arkme_extension_preview_reorder", again).json()["approval"]
    assert gs.dsh.approve_and_execute(gs.session, "arkme_extension_preview_reorder", first).status_code == 200
    assert_error(gs.dsh.execute(gs.session, "arkme_extension_preview_reorder", again, approval=approval),
                 429, "throttled")
    assert gs.gallery()["revision"] == gallery["revision"] + 1
    clock(60)
    assert gs.dsh.execute(gs.session, "arkme_extension_preview_reorder", again, approval=approval).status_code == 200
    assert [item["item"] for item in gs.gallery()["items"]] == items


def test_a_throttled_call_leaves_its_idempotency_key_for_the_retry(dsh, session, limited, clock):
    limited("arkme_context=1/minute/account")
    assert dsh.execute(session, "arkme_context", {}).status_code == 200
    assert_error(dsh.execute(session, "arkme_context", {}, HTTP_IDEMPOTENCY_KEY="k1"), 429, "throttled")
    clock(60)
    retried = dsh.execute(session, "arkme_context", {}, HTTP_IDEMPOTENCY_KEY="k1")
    assert retried.status_code == 200, retried.content
    assert not ToolCall.objects.filter(replayed=True).exists()


def test_pre_execute_denies_a_call_past_its_limits_without_counting_it(dsh, session, refs, candidates, limited,
                                                                       clock):
    from tests.support.groups import ref_of

    limited("arkme_group_member_add=1/minute/account")
    arguments = {"source_ref": refs["approval-group"],
                 "candidate_refs": [ref_of(candidates, "approval-group", "Carol")]}
    assert dsh.pre_execute(session, "arkme_group_member_add", arguments).json()["decision"] == "ask"
    assert dsh.approve_and_execute(session, "arkme_group_member_add", arguments).status_code == 200
    denied = dsh.pre_execute(session, "arkme_group_member_add", arguments).json()
    assert denied["decision"] == "deny" and denied["error"]["code"] == "throttled"
    assert denied["error"]["details"] == {"retry_after_seconds": 55}
    asked = ApprovalGrant.objects.count()
    clock(60)  # pre-execute counted nothing: the next window's call runs
    assert dsh.approve_and_execute(session, "arkme_group_member_add", arguments).status_code == 200
    assert ApprovalGrant.objects.count() == asked + 1


def test_a_replay_of_a_completed_key_is_answered_past_the_limits(dsh, session, limited):
    limited("arkme_context=1/minute/account")
    first = dsh.execute(session, "arkme_context", {}, HTTP_IDEMPOTENCY_KEY="k1")
    assert first.status_code == 200
    replayed = dsh.execute(session, "arkme_context", {}, HTTP_IDEMPOTENCY_KEY="k1")
    assert replayed.status_code == 200 and replayed.json() == first.json()  # not counted, not throttled
    assert ToolCall.objects.filter(replayed=True).count() == 1
    assert_error(dsh.execute(session, "arkme_context", {}), 429, "throttled")  # a new call is


def test_mcp_answers_the_tool_error_throttled_with_the_same_details(dsh, session, limited):
    limited("arkme_context=1/minute/account")
    assert Mcp(dsh, session).call("arkme_context")["isError"] is False
    for client in (Mcp(dsh, session), Mcp(dsh, session, version=LEGACY)):
        error = assert_tool_error(client.call("arkme_context"), "throttled")
        assert set(error["details"]) == {"retry_after_seconds"} and error["details"]["retry_after_seconds"] >= 1
    assert ToolCall.objects.filter(outcome="throttled", surface="mcp").count() == 2


def test_mcp_asks_nobody_about_a_call_past_its_limits(gs, limited, clock):
    limited("arkme_id_change=1/minute/account")
    client = Mcp(gs.dsh, gs.session)
    asked = []

    def human(params):
        asked.append(params)
        return accept(approve=True)(params)

    assert client.call_answering("arkme_id_change", {"arkme_id": "alice_one"}, human)["isError"] is False
    assert len(asked) == 1
    error = assert_tool_error(client.call_answering("arkme_id_change", {"arkme_id": "alice_two"}, human), "throttled")
    assert len(asked) == 1 and error["details"]["retry_after_seconds"] == 55
    assert ToolCall.objects.filter(outcome="throttled", tool_name="arkme_id_change").count() == 1


@pytest.fixture
def store_down(settings):
    """The counters' Redis at a port nothing listens on."""
    settings.ARKME_RATE_LIMIT_REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    settings.ARKME_RATE_LIMIT_TIMEOUT_SECONDS = 0.2


def test_a_store_that_cannot_be_reached_refuses_writes_and_lets_reads_through(dsh, session, settings, store_down):
    from config.environment import parse_rate_limits

    settings.ARKME_RATE_LIMITS = parse_rate_limits("off")
    approval = dsh.pre_execute(session, "arkme_id_change", {"arkme_id": "alice_new"}).json()["approval"]
    settings.ARKME_RATE_LIMITS = parse_rate_limits("arkme_context=1/minute/account,arkme_id_change=1/minute/account")
    for _ in range(2):
        assert dsh.execute(session, "arkme_context", {}).status_code == 200
    denied = dsh.pre_execute(session, "arkme_id_change", {"arkme_id": "alice_new"}).json()
    assert denied["decision"] == "deny" and denied["error"]["code"] == "dependency_unavailable"
    refused = dsh.execute(session, "arkme_id_change", {"arkme_id": "alice_new"}, approval=approval)
    assert_error(refused, 503, "dependency_unavailable")
    assert ApprovalGrant.objects.get().used_at is None
    assert_tool_error(Mcp(dsh, session).call("arkme_id_change", {"arkme_id": "alice_new"},
                                             meta={"io.arkme/approval": approval}), "dependency_unavailable")
    assert Mcp(dsh, session).call("arkme_context")["isError"] is False


def test_reads_are_not_limited_by_default_and_writes_are(settings):
    from config.environment import DEFAULT_RATE_LIMITS, parse_rate_limits

    settings.ARKME_RATE_LIMITS = parse_rate_limits(DEFAULT_RATE_LIMITS)
    assert limits.limits_for("arkme_context") == () and limits.limits_for("arkme_group_member_candidates") == ()
    invite = limits.limits_for("arkme_group_member_add")
    assert {(limit.calls, limit.period, limit.scope) for limit in invite} == {(30, 60, "account"), (300, 3600, "account")}
    for tool in ("arkme_id_change", "arkme_extension_preview_add", "arkme_extension_preview_delete",
                 "arkme_extension_preview_reorder"):
        assert [(limit.calls, limit.period, limit.scope) for limit in limits.limits_for(tool)] == [(120, 60, "account")]


def test_ended_windows_are_pruned(dsh, session, limited, clock):
    limited("arkme_context=5/minute/account")
    dsh.execute(session, "arkme_context", {})
    assert limits.rate_windows_purge() == 0  # its window has not ended (the real clock is behind NOW)
    RateWindow.objects.update(expires_at="2020-01-01T00:00:00Z")
    assert limits.rate_windows_purge() == 1 and not RateWindow.objects.exists()


def test_a_counter_names_no_secret(dsh, session, limited):
    limited("arkme_context=5/minute/client")
    dsh.execute(session, "arkme_context", {})
    [window] = RateWindow.objects.all()
    assert window.key == f"arkme_context:60:client:{dsh.client.pk}" and dsh.key not in window.key


@pytest.fixture
def redis_store(settings):
    """The counters in this run's Redis database, emptied of them; a day's windows, begun at
    least a minute before the day ends (Redis's clock cannot be moved)."""
    import time

    import redis

    from tests.support.live import listening
    from tests.support.services import require_service
    from tests.support.stack import redis_db

    require_service("Redis", listening(6379), "redis-server on 127.0.0.1:6379")
    url = f"redis://127.0.0.1:6379/{redis_db()}"
    client = redis.Redis.from_url(url)
    left = 86400 - client.time()[0] % 86400
    if left < 60:
        time.sleep(left + 1)
    for key in client.scan_iter("arkme:limits:*"):
        client.delete(key)
    settings.ARKME_RATE_LIMIT_REDIS_URL = url
    yield client
    for key in client.scan_iter("arkme:limits:*"):
        client.delete(key)


def test_redis_counts_in_hashes_that_expire_with_their_window(dsh, session, settings, redis_store):
    from config.environment import parse_rate_limits

    settings.ARKME_RATE_LIMITS = parse_rate_limits("arkme_context=2/day/account")
    assert [dsh.execute(session, "arkme_context", {}).status_code for _ in range(2)] == [200, 200]
    refused = dsh.execute(session, "arkme_context", {})
    error = assert_error(refused, 429, "throttled")
    [key] = [key.decode() for key in redis_store.scan_iter("arkme:limits:*")]
    account = dsh.client.sessions.get(public_id=session).account_id
    assert key == f"arkme:limits:arkme_context:86400:account:{account}"
    assert redis_store.hget(key, "n") == b"2"  # the refused call was not counted
    ttl = redis_store.pttl(key) / 1000
    assert 0 < ttl <= 86400 and abs(ttl - error["details"]["retry_after_seconds"]) <= 2
    assert not RateWindow.objects.exists()


def test_redis_mcp_peeks_without_counting_and_refuses_before_asking(gs, settings, redis_store):
    from config.environment import parse_rate_limits

    settings.ARKME_RATE_LIMITS = parse_rate_limits("arkme_id_change=1/day/account")
    client, asked = Mcp(gs.dsh, gs.session), []

    def human(params):
        asked.append(params)
        return accept(approve=True)(params)

    assert client.call_answering("arkme_id_change", {"arkme_id": "alice_one"}, human)["isError"] is False
    [key] = list(redis_store.scan_iter("arkme:limits:*"))
    assert redis_store.hget(key, "n") == b"1" and len(asked) == 1  # asked once, counted once
    assert_tool_error(client.call_answering("arkme_id_change", {"arkme_id": "alice_two"}, human), "throttled")
    assert len(asked) == 1 and redis_store.hget(key, "n") == b"1"


def test_redis_counts_a_call_in_every_rule_or_in_none(dsh, world, settings, redis_store):
    from config.environment import parse_rate_limits

    settings.ARKME_RATE_LIMITS = parse_rate_limits("arkme_context=1/day/session,arkme_context=3/day/account")
    first, second = (dsh.open_session(world.alice)["session"] for _ in range(2))
    assert dsh.execute(first, "arkme_context", {}).status_code == 200
    for _ in range(3):  # the session's rule refuses; the account's counts none of these
        assert_error(dsh.execute(first, "arkme_context", {}), 429, "throttled")
    account = f"arkme:limits:arkme_context:86400:account:{world.alice.pk}"
    assert redis_store.hget(account, "n") == b"1"
    assert dsh.execute(second, "arkme_context", {}).status_code == 200
    assert redis_store.hget(account, "n") == b"2"

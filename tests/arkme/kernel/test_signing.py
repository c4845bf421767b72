"""Refs signed with one derived key per signer are exactly Django's ``TimestampSigner``'s."""
from __future__ import annotations

import pytest
from django.core import signing

from arkme.kernel.signing import RefExpired, RefInvalid, handle_signer, load_ref, ref_signer

PAYLOADS = [{"c": "cht_abc"}, {"g": "grp_x1"}, {"c": "chat with spaces/and+signs"}, {"a": "1", "b": "2"},
            # base64 that needs the URL-safe alphabet ("???" and ">>>" encode to "/" and "+"),
            # non-ASCII that JSON escapes, and every padding length
            {"c": "???>>>"}, {"c": "ünï\u2028"}, *({"c": "x" * n} for n in range(4))]
SALTS = ["arkme.groups.candidate_ref:acc_1:grp_2", "arkme.groups.source_ref:acc_9", "s", "salt with ünïcode"]


@pytest.mark.parametrize("salt", SALTS)
def test_a_ref_is_byte_for_byte_what_django_signs(salt, monkeypatch):
    monkeypatch.setattr(signing.TimestampSigner, "timestamp", lambda self: "1xZC0u")
    sign = ref_signer(salt)
    for payload in PAYLOADS:
        assert sign(payload) == signing.TimestampSigner(salt=salt).sign_object(payload, compress=False)


@pytest.mark.parametrize("salt", SALTS)
def test_a_handle_ref_is_byte_for_byte_what_django_signs(salt, monkeypatch):
    monkeypatch.setattr(signing.TimestampSigner, "timestamp", lambda self: "1xZC0u")
    for payload in [p for p in PAYLOADS if len(p) == 1] + [{"ü\"key": "v"}, {"k": "quote\" and \\ back"}]:
        [(key, handle)] = payload.items()
        assert handle_signer(salt, key)(handle) == signing.TimestampSigner(salt=salt).sign_object(
            payload, compress=False)


def test_signers_fall_back_to_django_when_its_algorithm_is_not_sha256(monkeypatch):
    class Sha512Signer(signing.TimestampSigner):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, algorithm="sha512", **kwargs)

    monkeypatch.setattr(signing, "TimestampSigner", Sha512Signer)
    for ref in (ref_signer("s")({"c": "x"}), handle_signer("s", "c")("x")):
        assert ref == Sha512Signer(salt="s").sign_object({"c": "x"}, compress=False)
        assert len(ref.rsplit(":", 1)[1]) == 86  # a SHA-512 HMAC, not the fast path's SHA-256
        assert load_ref(ref, salt="s", max_age=60, key="c") == "x"


def test_the_secret_key_is_part_of_the_derived_key(settings):
    first = ref_signer("s")({"c": "x"})
    settings.SECRET_KEY = "another-secret-key-of-enough-length-for-tests"
    with pytest.raises(RefInvalid):
        load_ref(first, salt="s", max_age=60, key="c")
    assert load_ref(ref_signer("s")({"c": "x"}), salt="s", max_age=60, key="c") == "x"


def test_refs_read_back_only_with_their_salt_and_within_their_age(monkeypatch):
    ref = ref_signer("one")({"c": "cht_1"})
    assert load_ref(ref, salt="one", max_age=60, key="c") == "cht_1"
    with pytest.raises(RefInvalid):
        load_ref(ref, salt="two", max_age=60, key="c")
    with pytest.raises(RefInvalid):
        load_ref(ref[:-2] + ("A" if ref[-2] != "A" else "B") + ref[-1], salt="one", max_age=60, key="c")
    monkeypatch.setattr(signing.TimestampSigner, "timestamp", lambda self: signing.b62_encode(1))
    old = ref_signer("one")({"c": "cht_1"})
    with pytest.raises(RefExpired):
        load_ref(old, salt="one", max_age=60, key="c")

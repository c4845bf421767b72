"""Signed, opaque refs handed to the model: image refs, source refs and candidate refs.

Signing is not encryption: a signed value is readable base64 JSON. So a payload holds only
random public handles, never an internal id; whom a ref is for (the account, the group) is
bound through the salt, so a ref presented by anyone else fails its signature.
"""
from __future__ import annotations

import binascii
import hashlib
import hmac
import json
from json.encoder import encode_basestring_ascii
from typing import Any, Callable

from django.core import signing
from django.utils.encoding import force_bytes

MAX_REF_LENGTH = 512


class RefInvalid(Exception):
    """Bad signature, someone else's ref, a ref of another purpose, or not a ref at all."""


class RefExpired(Exception):
    """A genuine ref past its maximum age."""


def ref_signer(salt: str) -> Callable[[dict[str, str]], str]:
    """Signs payloads for one salt; one signer serves a whole list of refs.

    The refs are exactly ``TimestampSigner(salt=salt).sign_object(payload)``'s, and
    ``load_ref`` reads them with Django's signer. Django derives the HMAC key from the salt
    and the secret again for every value it signs; a call that hands out fifty candidate refs
    spent more on that than on the rest of its work, so the key is derived once per signer
    (one per call) and the timestamp taken once with it."""
    seal = _sealer(salt)
    if seal is None:
        signer = signing.TimestampSigner(salt=salt)
        return lambda payload: signer.sign_object(payload, compress=False)
    return lambda payload: seal(_encode_json(payload).encode("latin-1"))


def handle_signer(salt: str, key: str) -> Callable[[str], str]:
    """``ref_signer(salt)`` for the payload every ref of the product has: ``{key: handle}``.

    A candidates call signs fifty of them. Building the JSON from the key's encoded prefix
    and the handle's JSON string (``json``'s own C escaper, which ``json.dumps`` uses with
    its default ``ensure_ascii``) instead of encoding a dict halves the cost of a ref; the
    bytes are the same (``tests/arkme/kernel/test_signing.py``)."""
    seal = _sealer(salt)
    if seal is None:
        sign = ref_signer(salt)
        return lambda handle: sign({key: handle})
    head = f"{{{_json_string(key)}:".encode()
    return lambda handle: seal(head + _json_string(handle).encode() + b"}")


def _sealer(salt: str) -> Callable[[bytes], str] | None:
    """Django's ``sign_object`` after the JSON: base64, the timestamp, the HMAC; None when
    Django's signer no longer uses SHA-256 (never, unless its default changes), so that the
    callers fall back to Django's own."""
    signer = signing.TimestampSigner(salt=salt)
    if signer.algorithm != "sha256":
        return None
    derived = hashlib.sha256(f"{salt}signer".encode() + force_bytes(signer.key)).digest()
    # salted_hmac's HMAC with its key set up once: each ref copies the keyed state instead of
    # hashing the key's two padded blocks again (1.3 → 0.8 µs a ref, fifty refs a call).
    keyed = hmac.new(derived, digestmod=hashlib.sha256)
    stamp = f"{signer.sep}{signer.timestamp()}".encode()
    sep = signer.sep.encode()

    def seal(data: bytes) -> str:
        value = _b64(data) + stamp  # Django's b64_encode
        mac = keyed.copy()
        mac.update(value)
        return (value + sep + _b64(mac.digest())).decode()

    return seal


# One encoder for every ref: json.dumps builds a new one per call when given separators.
_encode_json = json.JSONEncoder(separators=(",", ":")).encode
_json_string: Callable[[str], str] = encode_basestring_ascii
_URLSAFE = bytes.maketrans(b"+/", b"-_")


def _b64(data: bytes) -> bytes:
    """``django.core.signing.b64_encode``: URL-safe base64 without padding (padding only
    ever trails, so stripping the right end is stripping both)."""
    return binascii.b2a_base64(data, newline=False).translate(_URLSAFE).rstrip(b"=")


def sign_ref(payload: dict[str, str], *, salt: str) -> str:
    return ref_signer(salt)(payload)


def load_ref(value: object, *, salt: str, max_age: int, key: str) -> str:
    """The handle under ``key`` in a ref signed with ``salt`` no longer than ``max_age`` ago."""
    if not isinstance(value, str) or not value or len(value) > MAX_REF_LENGTH:
        raise RefInvalid
    try:
        payload: Any = signing.TimestampSigner(salt=salt).unsign_object(value, max_age=max_age)
    except signing.SignatureExpired as exc:
        raise RefExpired from exc
    except (signing.BadSignature, ValueError) as exc:
        raise RefInvalid from exc
    handle = payload.get(key) if isinstance(payload, dict) else None
    if not isinstance(handle, str):
        raise RefInvalid
    return handle

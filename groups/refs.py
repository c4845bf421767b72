"""Signed, opaque refs handed to the model.

Signing is not encryption: a signed value is readable base64 JSON. So a payload holds only
random public handles (a group's or a private chat's public id), never an account id; the
account (and for candidates, the group) is bound through the salt, so a ref presented by
anyone else fails its signature.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from django.core import signing

SOURCE_REF_MAX_AGE = 24 * 3600
CANDIDATE_REF_MAX_AGE = 3600


class RefInvalid(Exception):
    """Bad signature, another account's or another group's ref, or not a ref at all."""


class RefExpired(Exception):
    """A genuine ref past its maximum age."""


def _source_salt(account_public_id: str) -> str:
    return f"arkme.groups.source_ref:{account_public_id}"


def _candidate_salt(account_public_id: str, group_public_id: str) -> str:
    return f"arkme.groups.candidate_ref:{account_public_id}:{group_public_id}"


def _load(value: object, *, salt: str, max_age: int) -> dict:
    if not isinstance(value, str) or not value or len(value) > 512:
        raise RefInvalid
    try:
        payload = signing.loads(value, salt=salt, max_age=max_age)
    except signing.SignatureExpired as exc:
        raise RefExpired from exc
    except signing.BadSignature as exc:
        raise RefInvalid from exc
    if not isinstance(payload, dict):
        raise RefInvalid
    return payload


def make_source_ref(*, account_public_id: str, group_public_id: str) -> str:
    return signing.dumps({"g": group_public_id}, salt=_source_salt(account_public_id), compress=False)


def read_source_ref(value: object, *, account_public_id: str) -> str:
    """The group public id a source ref names, for this account only."""
    payload = _load(value, salt=_source_salt(account_public_id), max_age=SOURCE_REF_MAX_AGE)
    group = payload.get("g")
    if not isinstance(group, str):
        raise RefInvalid
    return group


@dataclass(frozen=True)
class CandidateHandle:
    chat_public_id: str


def candidate_ref_maker(*, account_public_id: str, group_public_id: str) -> Callable[[str], str]:
    """Signs candidate refs for one account and group; one signer serves a whole list."""
    signer = signing.TimestampSigner(salt=_candidate_salt(account_public_id, group_public_id))
    return lambda chat_public_id: signer.sign_object({"c": chat_public_id}, compress=False)


def make_candidate_ref(*, account_public_id: str, group_public_id: str, chat_public_id: str) -> str:
    return candidate_ref_maker(account_public_id=account_public_id, group_public_id=group_public_id)(chat_public_id)


def read_candidate_ref(value: object, *, account_public_id: str, group_public_id: str) -> CandidateHandle:
    payload = _load(
        value, salt=_candidate_salt(account_public_id, group_public_id), max_age=CANDIDATE_REF_MAX_AGE
    )
    chat = payload.get("c")
    if not isinstance(chat, str):
        raise RefInvalid
    return CandidateHandle(chat_public_id=chat)

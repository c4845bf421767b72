"""The refs of the group domain: a group's ``source_ref`` (bound to the account) and a
``candidate_ref`` (bound to the account and the group). Each holds one random public id."""
from __future__ import annotations

from typing import Callable

from arkme.kernel.signing import handle_signer, load_ref, sign_ref

SOURCE_REF_MAX_AGE = 24 * 3600
CANDIDATE_REF_MAX_AGE = 3600


def _source_salt(account_public_id: str) -> str:
    return f"arkme.groups.source_ref:{account_public_id}"


def _candidate_salt(account_public_id: str, group_public_id: str) -> str:
    return f"arkme.groups.candidate_ref:{account_public_id}:{group_public_id}"


def make_source_ref(*, account_public_id: str, group_public_id: str) -> str:
    return sign_ref({"g": group_public_id}, salt=_source_salt(account_public_id))


def source_ref_maker(*, account_public_id: str) -> Callable[[str], str]:
    """Signs source refs (each a group's public id) for one account: one derived key for a list."""
    return handle_signer(_source_salt(account_public_id), "g")


def read_source_ref(value: object, *, account_public_id: str) -> str:
    """The group public id a source ref names, for this account only."""
    return load_ref(value, salt=_source_salt(account_public_id), max_age=SOURCE_REF_MAX_AGE, key="g")


def candidate_ref_maker(*, account_public_id: str, group_public_id: str) -> Callable[[str], str]:
    """Signs candidate refs (each a private chat's public id) for one account and group."""
    return handle_signer(_candidate_salt(account_public_id, group_public_id), "c")


def read_candidate_ref(value: object, *, account_public_id: str, group_public_id: str) -> str:
    """The public id of the private chat a candidate ref names."""
    return load_ref(value, salt=_candidate_salt(account_public_id, group_public_id),
                    max_age=CANDIDATE_REF_MAX_AGE, key="c")

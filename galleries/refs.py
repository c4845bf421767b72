"""Signed image refs: an account's own library image, bound to that account by the salt."""
from __future__ import annotations

from django.core import signing

IMAGE_REF_MAX_AGE = 30 * 24 * 3600


class ImageRefInvalid(Exception):
    pass


class ImageRefExpired(Exception):
    pass


def _salt(account_public_id: str) -> str:
    return f"arkme.galleries.image_ref:{account_public_id}"


def make_image_ref(*, account_public_id: str, image_public_id: str) -> str:
    return signing.dumps({"i": image_public_id}, salt=_salt(account_public_id))


def read_image_ref(value: object, *, account_public_id: str) -> str:
    if not isinstance(value, str) or not value or len(value) > 512:
        raise ImageRefInvalid
    try:
        payload = signing.loads(value, salt=_salt(account_public_id), max_age=IMAGE_REF_MAX_AGE)
    except signing.SignatureExpired as exc:
        raise ImageRefExpired from exc
    except signing.BadSignature as exc:
        raise ImageRefInvalid from exc
    if not isinstance(payload, dict) or not isinstance(payload.get("i"), str):
        raise ImageRefInvalid
    return payload["i"]

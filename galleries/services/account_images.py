"""An account's own image library: the images ``image_ref``s point at.

An ``image_ref`` is signed for its owner (the salt names the account) and holds only the
image's random public id.
"""
from __future__ import annotations

from arkme.accounts.models import Account
from arkme.kernel.signing import load_ref, sign_ref

from ..blobs.services import blobs_store_missing
from ..ingest.process_image import process_image
from ..models import AccountImage, Blob

IMAGE_REF_MAX_AGE = 30 * 24 * 3600


def _salt(account_public_id: str) -> str:
    return f"arkme.galleries.image_ref:{account_public_id}"


def make_image_ref(*, account_public_id: str, image_public_id: str) -> str:
    return sign_ref({"i": image_public_id}, salt=_salt(account_public_id))


def read_image_ref(value: object, *, account_public_id: str) -> str:
    """The public id of the image an ``image_ref`` names, for its owner only."""
    return load_ref(value, salt=_salt(account_public_id), max_age=IMAGE_REF_MAX_AGE, key="i")


def account_image_create(*, owner: Account, name: str, data: bytes) -> AccountImage:
    """Validate, normalise and store an image in the owner's library (idempotent per name)."""
    existing = AccountImage.objects.filter(owner=owner, name=name).first()
    if existing is not None:
        return existing
    image = process_image(data, "image")
    blobs_store_missing([image])
    return AccountImage.objects.create(owner=owner, name=name, blob=Blob.objects.get(sha256=image.sha256))


def image_ref_for(image: AccountImage) -> str:
    return make_image_ref(account_public_id=image.owner.public_id, image_public_id=image.public_id)

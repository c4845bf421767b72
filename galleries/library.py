"""An account's own image library: the images ``image_ref``s point at."""
from __future__ import annotations

from arkme.models import Account

from .blobs import blobs_store_missing
from .models import AccountImage, Blob
from .pipeline import process_image
from .refs import make_image_ref


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

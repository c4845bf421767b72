"""Image sources of a gallery add: an image_ref, captured attachments, or workspace files.

A source is resolved to a server-side handle at prepare, and read again by that handle at
confirm. Handles never leave the service.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from arkme.errors import ArkmeError, InvalidArguments, PayloadTooLarge
from arkme.models import Account
from toolregistry import conversation

from .blobstore import sha256_hex
from .imaging import MAX_SOURCE_BYTES, ImageRejected, sniff
from .models import AccountImage
from .refs import ImageRefExpired, ImageRefInvalid, read_image_ref
from .selectors import read_blob
from .workspace import read_workspace_file


@dataclass(frozen=True)
class SourceBytes:
    handle: dict[str, Any]
    field: str
    data: bytes
    sha256: str


class SourceGone(Exception):
    """A source that can no longer be read as it was."""


def _too_large(field: str) -> PayloadTooLarge:
    return PayloadTooLarge("A source image may have at most 5 MiB.", code="source_too_large", details={"fields": [field]})


def _bounded(data: bytes, field: str) -> bytes:
    if len(data) > MAX_SOURCE_BYTES:
        raise _too_large(field)
    return data


def workspace_dir(session) -> Path:
    if not session.workspace:
        raise InvalidArguments("This session has no Agent workspace.", code="no_workspace", fields=["source"])
    return Path(settings.ARKME_WORKSPACE_ROOT) / session.workspace


def resolve_handles(*, account: Account, session, arguments: dict[str, Any]) -> list[tuple[dict, str]]:
    """Each source's handle and the argument it came from, without reading image bytes
    (except captured attachments, whose image-ness decides which are meant)."""
    source = arguments["source"]
    if source == "image_ref":
        try:
            image_id = read_image_ref(arguments.get("image_ref"), account_public_id=account.public_id)
        except ImageRefExpired as exc:
            raise InvalidArguments("The image_ref has expired.", code="expired_image_ref", fields=["image_ref"]) from exc
        except ImageRefInvalid as exc:
            raise InvalidArguments("The image_ref is not valid.", code="invalid_image_ref", fields=["image_ref"]) from exc
        image = AccountImage.objects.filter(public_id=image_id, owner=account).first()
        if image is None:
            raise InvalidArguments("The image_ref is not valid.", code="invalid_image_ref", fields=["image_ref"])
        return [({"kind": "account_image", "id": image.pk}, "image_ref")]
    if source == "workspace":
        workspace_dir(session)
        return [({"kind": "workspace", "path": path}, f"workspace_paths[{i}]")
                for i, path in enumerate(arguments["workspace_paths"])]
    return _attachment_handles(session, arguments.get("attachment_indices"))


def _attachment_handles(session, indices: list[int] | None) -> list[tuple[dict, str]]:
    message = conversation.latest_message(session.pk)
    attachments = list(conversation.attachments_of(message)) if message else []
    if not attachments:
        raise ImageRejected("no_captured_images", "The user's latest message has no attached images.", "source")
    if indices is None:
        chosen = [(a, "source") for a in attachments if _is_image(a)]
        if not chosen:
            raise ImageRejected("no_captured_images", "The user's latest message has no attached images.", "source")
    else:
        chosen = []
        for position, index in enumerate(indices):
            field = f"attachment_indices[{position}]"
            if index > len(attachments):
                raise InvalidArguments("There is no attachment with that index.", code="invalid_attachment_index", fields=[field])
            attachment = attachments[index - 1]
            if not _is_image(attachment):
                raise ImageRejected("not_an_image", "That attachment is not an image.", field)
            chosen.append((attachment, field))
    return [({"kind": "attachment", "id": a.pk}, field) for a, field in chosen]


def _is_image(attachment) -> bool:
    try:
        sniff(conversation.read_attachment(attachment, 512))
    except ArkmeError:
        return False
    return True


def read_source(*, account: Account, session, handle: dict, field: str) -> SourceBytes:
    """The bytes of one source now. ``SourceGone`` when it no longer exists."""
    kind = handle["kind"]
    if kind == "workspace":
        read = read_workspace_file(workspace_dir(session), handle["path"], field)
        return SourceBytes(handle, field, read.data, read.sha256)
    if kind == "attachment":
        attachment = conversation.attachment_in_session(session.pk, handle["id"])
        if attachment is None:
            raise SourceGone
        try:
            data = _bounded(conversation.read_attachment(attachment, MAX_SOURCE_BYTES), field)
        except FileNotFoundError as exc:
            raise SourceGone from exc
        return SourceBytes(handle, field, data, sha256_hex(data))
    image = AccountImage.objects.filter(pk=handle["id"], owner=account).select_related("blob").first()
    if image is None:
        raise SourceGone
    data = _bounded(read_blob(image.blob), field)
    return SourceBytes(handle, field, data, sha256_hex(data))

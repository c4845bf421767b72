"""Image sources of a gallery add: an image_ref, captured attachments, or workspace files.

A source is resolved to a server-side handle at prepare, and read again by that handle at
confirm. Handles never leave the service.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from arkme.accounts.models import AccountIdentity
from arkme.conversations import selectors as conversation
from arkme.conversations.models import CapturedAttachment, SessionKey
from arkme.kernel.errors import ArkmeError, ErrorCode, InvalidArguments
from arkme.kernel.signing import RefExpired, RefInvalid

from ..blobs.storage import blob_key, blob_store
from ..ingest.limits import MAX_SOURCE_BYTES
from ..ingest.process_image import sha256_hex
from ..ingest.raster import sniff
from ..ingest.rejection import ImageRejected
from ..ingest.workspace import read_workspace_file, source_too_large
from ..models import AccountImage
from ..selectors import SourceArguments
from .account_images import read_image_ref

Handle = dict[str, Any]
SNIFF_BYTES = 512


@dataclass(frozen=True)
class SourceBytes:
    handle: Handle
    field: str
    data: bytes
    sha256: str


class SourceGone(Exception):
    """A source that can no longer be read as it was."""


def _bounded(data: bytes, field: str) -> bytes:
    if len(data) > MAX_SOURCE_BYTES:
        raise source_too_large(field)
    return data


def workspace_dir(session: SessionKey) -> Path:
    if not session.workspace:
        raise InvalidArguments("This session has no Agent workspace.", code=ErrorCode.NO_WORKSPACE,
                               fields=["source"])
    return Path(settings.ARKME_WORKSPACE_ROOT) / session.workspace


def _invalid_image_ref() -> InvalidArguments:
    return InvalidArguments("The image_ref is not valid.", code=ErrorCode.INVALID_IMAGE_REF, fields=["image_ref"])


def resolve_handles(*, account: AccountIdentity, session: SessionKey,
                    arguments: SourceArguments) -> list[tuple[Handle, str]]:
    """Each source's handle and the argument it came from, without reading image bytes
    (except captured attachments, whose image-ness decides which are meant)."""
    source = arguments["source"]
    if source == "image_ref":
        try:
            image_id = read_image_ref(arguments.get("image_ref"), account_public_id=account.public_id)
        except RefExpired as exc:
            raise InvalidArguments("The image_ref has expired.", code=ErrorCode.EXPIRED_IMAGE_REF,
                                   fields=["image_ref"]) from exc
        except RefInvalid as exc:
            raise _invalid_image_ref() from exc
        image = AccountImage.objects.filter(public_id=image_id, owner_id=account.pk).only("pk").first()
        if image is None:
            raise _invalid_image_ref()
        return [({"kind": "account_image", "id": image.pk}, "image_ref")]
    if source == "workspace":
        workspace_dir(session)
        return [({"kind": "workspace", "path": path}, f"workspace_paths[{i}]")
                for i, path in enumerate(arguments.get("workspace_paths", []))]
    return _attachment_handles(session, arguments.get("attachment_indices"))


def _no_captured_images() -> ImageRejected:
    return ImageRejected(ErrorCode.NO_CAPTURED_IMAGES, "The user's latest message has no attached images.", "source")


def _attachment_handles(session: SessionKey, indices: list[int] | None) -> list[tuple[Handle, str]]:
    message = conversation.latest_message(session.pk)
    attachments = list(conversation.attachments_of(message)) if message else []
    if not attachments:
        raise _no_captured_images()
    if indices is None:
        chosen = [(a, "source") for a in attachments if _is_image(a)]
        if not chosen:
            raise _no_captured_images()
    else:
        chosen = []
        for position, index in enumerate(indices):
            field = f"attachment_indices[{position}]"
            if index > len(attachments):
                raise InvalidArguments("There is no attachment with that index.",
                                       code=ErrorCode.INVALID_ATTACHMENT_INDEX, fields=[field])
            attachment = attachments[index - 1]
            if not _is_image(attachment):
                raise ImageRejected(ErrorCode.NOT_AN_IMAGE, "That attachment is not an image.", field)
            chosen.append((attachment, field))
    return [({"kind": "attachment", "id": a.pk}, field) for a, field in chosen]


def _is_image(attachment: CapturedAttachment) -> bool:
    try:
        sniff(conversation.read_attachment(attachment, SNIFF_BYTES))
    except ArkmeError:
        return False
    return True


def read_source(*, account: AccountIdentity, session: SessionKey, handle: Handle, field: str) -> SourceBytes:
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
    image = AccountImage.objects.filter(pk=handle["id"], owner_id=account.pk).select_related("blob").first()
    if image is None:
        raise SourceGone
    try:
        data = _bounded(blob_store().read(blob_key(image.blob.sha256)), field)
    except FileNotFoundError as exc:
        raise SourceGone from exc
    return SourceBytes(handle, field, data, sha256_hex(data))

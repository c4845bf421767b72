"""The one domain error base and the registry of every error code the service answers with.

Every rule a service or tool enforces is raised as an ``ArkmeError`` whose ``code`` is an
``ErrorCode``; the DSH exception handler turns it into the error envelope, and the OpenAPI
schema lists the registry as the enum of ``error.code``. ``message`` and ``details`` are
shown to the model, so they hold no path, attachment id, image ref, object key, URL, bytes,
user id or attacker-chosen text.
"""
from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any


class ErrorCode(enum.StrEnum):
    """Stable snake_case words of the error envelope: part of the wire contract."""

    # Generic, one per status class.
    ERROR = "error"
    INVALID_REQUEST = "invalid_request"
    MALFORMED_REQUEST = "malformed_request"
    INVALID_ARGUMENTS = "invalid_arguments"
    NOT_AUTHENTICATED = "not_authenticated"
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not_found"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    NOT_ACCEPTABLE = "not_acceptable"
    CONFLICT = "conflict"
    PAYLOAD_TOO_LARGE = "payload_too_large"
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"
    CONTENT_REJECTED = "content_rejected"
    THROTTLED = "throttled"
    INTERNAL_ERROR = "internal_error"
    DEPENDENCY_UNAVAILABLE = "dependency_unavailable"
    DATABASE_UNAVAILABLE = "database_unavailable"
    STORAGE_UNAVAILABLE = "storage_unavailable"
    TASK_QUEUE_UNAVAILABLE = "task_queue_unavailable"
    # Clients, sessions and messages.
    UNKNOWN_PROFILE = "unknown_profile"
    PROFILE_NOT_ALLOWED = "profile_not_allowed"
    CLIENT_EXISTS = "client_exists"
    UNKNOWN_CLIENT = "unknown_client"
    CLIENT_REVOKED = "client_revoked"
    UNKNOWN_ACCOUNT = "unknown_account"
    UNKNOWN_SESSION = "unknown_session"
    INVALID_WORKSPACE = "invalid_workspace"
    DUPLICATE_MESSAGE = "duplicate_message"
    TOO_MANY_ATTACHMENTS = "too_many_attachments"
    ATTACHMENT_TOO_LARGE = "attachment_too_large"
    # Tools, approvals and idempotency.
    UNKNOWN_TOOL = "unknown_tool"
    APPROVAL_REQUIRED = "approval_required"
    APPROVAL_DECLINED = "approval_declined"
    APPROVAL_PENDING = "approval_pending"
    APPROVAL_PAGE_REQUIRED = "approval_page_required"
    UNKNOWN_APPROVAL = "unknown_approval"
    INVALID_IDEMPOTENCY_KEY = "invalid_idempotency_key"
    IDEMPOTENCY_KEY_REUSED = "idempotency_key_reused"
    IDEMPOTENCY_IN_PROGRESS = "idempotency_in_progress"
    CALL_CANCELLED = "call_cancelled"
    # Accounts.
    INVALID_ARKME_ID = "invalid_arkme_id"
    ARKME_ID_TAKEN = "arkme_id_taken"
    ARKME_ID_ALREADY_CHANGED = "arkme_id_already_changed"
    # Galleries.
    UNKNOWN_EXTENSION = "unknown_extension"
    UNKNOWN_ITEM = "unknown_item"
    UNKNOWN_OPERATION = "unknown_operation"
    INVALID_ORDER = "invalid_order"
    REVISION_CONFLICT = "revision_conflict"
    CAPACITY_EXCEEDED = "capacity_exceeded"
    OPERATION_PENDING = "operation_pending"
    OPERATION_CONFIRMED = "operation_confirmed"
    OPERATION_CANCELLED = "operation_cancelled"
    OPERATION_FAILED = "operation_failed"
    OPERATION_EXPIRED = "operation_expired"
    CONFIRMATION_REQUIRED = "confirmation_required"
    SOURCE_CHANGED = "source_changed"
    TARGET_CHANGED = "target_changed"
    INVALID_IMAGE_REF = "invalid_image_ref"
    EXPIRED_IMAGE_REF = "expired_image_ref"
    NO_CAPTURED_IMAGES = "no_captured_images"
    INVALID_ATTACHMENT_INDEX = "invalid_attachment_index"
    NOT_AN_IMAGE = "not_an_image"
    NO_WORKSPACE = "no_workspace"
    WORKSPACE_NOT_FOUND = "workspace_not_found"
    WORKSPACE_FILE_NOT_FOUND = "workspace_file_not_found"
    WORKSPACE_FILE_REFUSED = "workspace_file_refused"
    INVALID_WORKSPACE_PATH = "invalid_workspace_path"
    SOURCE_TOO_LARGE = "source_too_large"
    UNSUPPORTED_FORMAT = "unsupported_format"
    INVALID_IMAGE = "invalid_image"
    IMAGE_DIMENSIONS = "image_dimensions"
    IMAGE_TOO_LARGE = "image_too_large"
    ANIMATED_IMAGE = "animated_image"
    IMAGE_TOO_COMPLEX = "image_too_complex"
    UNSAFE_SVG = "unsafe_svg"
    SVG_RENDER_FAILED = "svg_render_failed"
    BLOB_CORRUPTED = "blob_corrupted"
    # Groups.
    INVALID_SOURCE_REF = "invalid_source_ref"
    EXPIRED_SOURCE_REF = "expired_source_ref"
    UNKNOWN_GROUP = "unknown_group"
    NOT_A_MEMBER = "not_a_member"
    UNKNOWN_JOIN_REQUEST = "unknown_join_request"
    JOIN_REQUEST_DECIDED = "join_request_decided"


# What goes with a refusal on every door (REST and MCP): the challenge of a 401 and when a
# dependency's 503 is worth trying again.
WWW_AUTHENTICATE = 'Bearer realm="dsh"'
RETRY_AFTER_SECONDS = "5"


class ArkmeError(Exception):
    code: ErrorCode = ErrorCode.ERROR
    http_status: int = 400
    default_message: str = "The request could not be completed."

    def __init__(self, message: str | None = None, *, code: ErrorCode | None = None,
                 details: dict[str, Any] | None = None) -> None:
        self.message = message or self.default_message
        if code is not None:
            self.code = ErrorCode(code)
        self.details = details or {}
        super().__init__(self.message)

    def as_error(self) -> dict[str, Any]:
        """The inside of the envelope: ``{"code", "message", "details"?}``."""
        error: dict[str, Any] = {"code": str(self.code), "message": self.message}
        if self.details:
            error["details"] = self.details
        return error

    def as_envelope(self) -> dict[str, Any]:
        return {"error": self.as_error()}


class InvalidRequest(ArkmeError):
    code = ErrorCode.INVALID_REQUEST
    http_status = 400
    default_message = "The request is malformed."


class InvalidArguments(ArkmeError):
    code = ErrorCode.INVALID_ARGUMENTS
    http_status = 400
    default_message = "The arguments are not valid for this tool."

    def __init__(self, message: str | None = None, *, fields: list[str] | None = None,
                 code: ErrorCode | None = None, details: dict[str, Any] | None = None) -> None:
        merged = dict(details or {})
        if fields:
            merged["fields"] = fields
        super().__init__(message, code=code, details=merged)


class NotAuthenticated(ArkmeError):
    code = ErrorCode.NOT_AUTHENTICATED
    http_status = 401
    default_message = "A valid client key is required."


class Forbidden(ArkmeError):
    code = ErrorCode.FORBIDDEN
    http_status = 403
    default_message = "This is not allowed."


class ApprovalRequired(ArkmeError):
    code = ErrorCode.APPROVAL_REQUIRED
    http_status = 403
    default_message = "This call needs the human's approval for exactly these arguments."


class ApprovalDeclined(ArkmeError):
    code = ErrorCode.APPROVAL_DECLINED
    http_status = 403
    default_message = "The human declined this call; nothing was done."


class ApprovalPending(ArkmeError):
    """The approval is taken on Arkme's own page and the account has not answered there yet."""

    code = ErrorCode.APPROVAL_PENDING
    http_status = 403
    default_message = "The human has not approved this call on Arkme's approval page yet; nothing was done."


class ApprovalPageRequired(ArkmeError):
    """A call whose approval is taken on Arkme's page, from an MCP client that cannot open a
    URL for its human: ``details.url`` is the page (an addition the contract names for this
    error alone); once the account approved there, the same call runs."""

    code = ErrorCode.APPROVAL_PAGE_REQUIRED
    http_status = 403
    default_message = ("This call is approved on Arkme's approval page: ask the user to open the address in "
                       "details.url, signed in to Arkme, and approve it there; then make the same call again.")


class CallCancelled(ArkmeError):
    """The caller went away before the call's effect committed (an MCP client's disconnect is
    its cancellation): nothing was written. Nobody reads the answer; its status is nginx's
    "client closed request", which the audit and the metrics keep apart from server errors."""

    code = ErrorCode.CALL_CANCELLED
    http_status = 499
    default_message = "The caller went away before the call completed; nothing was written."


class NotFound(ArkmeError):
    code = ErrorCode.NOT_FOUND
    http_status = 404
    default_message = "Not found."


class UnknownTool(NotFound):
    code = ErrorCode.UNKNOWN_TOOL
    default_message = "No such tool in this session."


class Conflict(ArkmeError):
    code = ErrorCode.CONFLICT
    http_status = 409
    default_message = "The current state does not allow this."


class PayloadTooLarge(ArkmeError):
    code = ErrorCode.PAYLOAD_TOO_LARGE
    http_status = 413
    default_message = "The payload is too large."


class ContentRejected(ArkmeError):
    code = ErrorCode.CONTENT_REJECTED
    http_status = 422
    default_message = "The content was rejected."


class Throttled(ArkmeError):
    """Past a limit of the caller's own (the contract's 429): ``retry_after_seconds`` in the
    details, which the API also sends as ``Retry-After``. Nothing was done."""

    code = ErrorCode.THROTTLED
    http_status = 429
    default_message = "Too many requests; retry later."

    def __init__(self, message: str | None = None, *, retry_after_seconds: int,
                 details: dict[str, Any] | None = None) -> None:
        super().__init__(message, details={**(details or {}), "retry_after_seconds": max(1, int(retry_after_seconds))})


class DependencyUnavailable(ArkmeError):
    code = ErrorCode.DEPENDENCY_UNAVAILABLE
    http_status = 503
    default_message = "A dependency is unavailable; the request is safe to retry."


class DatabaseUnavailable(DependencyUnavailable):
    code = ErrorCode.DATABASE_UNAVAILABLE
    default_message = "The database is unavailable; try again."


class StorageUnavailable(DependencyUnavailable):
    code = ErrorCode.STORAGE_UNAVAILABLE
    default_message = "Storage is unavailable; try again."


class QueueUnavailable(DependencyUnavailable):
    code = ErrorCode.TASK_QUEUE_UNAVAILABLE
    default_message = "The task queue is unavailable; try again."


def error_from_answer(error: dict[str, Any], status: int) -> ArkmeError:
    """Rebuild a domain error that crossed a JSON boundary (a task's answer)."""
    try:
        code = ErrorCode(str(error.get("code")))
    except ValueError:
        code = ErrorCode.ERROR
    raised = ArkmeError(error.get("message"), code=code, details=error.get("details"))
    raised.http_status = status
    return raised


def refusal_headers(status: int, envelope: Mapping[str, Any]) -> dict[str, str]:
    """The headers of a refusal, the same on every door: ``WWW-Authenticate`` on a 401,
    ``Retry-After`` on a 429 (the caller's limit, from its details) and on a 503."""
    if status == 401:
        return {"WWW-Authenticate": WWW_AUTHENTICATE}
    if status == 429:
        details = envelope.get("error", {}).get("details", {})
        return {"Retry-After": str(details.get("retry_after_seconds", 1))}
    if status == 503:
        return {"Retry-After": RETRY_AFTER_SECONDS}
    return {}

"""The one domain error base.

Every rule a service or tool enforces is raised as an ``ArkmeError``; the DSH exception
handler turns it into the error envelope. ``message`` and ``details`` are shown to the model,
so they hold no path, attachment id, image ref, object key, URL, bytes or user id.
"""
from __future__ import annotations

from typing import Any


class ArkmeError(Exception):
    code: str = "error"
    http_status: int = 400
    default_message: str = "The request could not be completed."

    def __init__(self, message: str | None = None, *, code: str | None = None,
                 details: dict[str, Any] | None = None) -> None:
        self.message = message or self.default_message
        if code is not None:
            self.code = code
        self.details = details or {}
        super().__init__(self.message)

    def as_envelope(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            error["details"] = self.details
        return {"error": error}


class InvalidRequest(ArkmeError):
    code = "invalid_request"
    http_status = 400
    default_message = "The request is malformed."


class InvalidArguments(ArkmeError):
    code = "invalid_arguments"
    http_status = 400
    default_message = "The arguments are not valid for this tool."

    def __init__(self, message: str | None = None, *, fields: list[str] | None = None,
                 code: str | None = None, details: dict[str, Any] | None = None) -> None:
        merged = dict(details or {})
        if fields:
            merged["fields"] = fields
        super().__init__(message, code=code, details=merged)


class NotAuthenticated(ArkmeError):
    code = "not_authenticated"
    http_status = 401
    default_message = "A valid client key is required."


class Forbidden(ArkmeError):
    code = "forbidden"
    http_status = 403
    default_message = "This is not allowed."


class ApprovalRequired(ArkmeError):
    code = "approval_required"
    http_status = 403
    default_message = "This call needs the human's approval for exactly these arguments."


class NotFound(ArkmeError):
    code = "not_found"
    http_status = 404
    default_message = "Not found."


class UnknownTool(NotFound):
    code = "unknown_tool"
    default_message = "No such tool in this session."


class Conflict(ArkmeError):
    code = "conflict"
    http_status = 409
    default_message = "The current state does not allow this."


class PayloadTooLarge(ArkmeError):
    code = "payload_too_large"
    http_status = 413
    default_message = "The payload is too large."


class ContentRejected(ArkmeError):
    code = "content_rejected"
    http_status = 422
    default_message = "The content was rejected."


class DependencyUnavailable(ArkmeError):
    code = "dependency_unavailable"
    http_status = 503
    default_message = "A dependency is unavailable; the request is safe to retry."

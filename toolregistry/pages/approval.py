"""The approval page: the session's own account, signed in to Arkme, approves or declines a
call its agent wants to make. The URL carries only an opaque handle; the ledger
(``toolregistry.approvals``) decides, this module shows.

Nobody else may see or answer it: a visitor not signed in is sent to sign in, anyone else
signed in gets 403 and the approval stays pending. The page and its images are never cached
and never framed (clickjacking), and send no referrer to other sites (the handle is in the address).
"""
from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.clickjacking import xframe_options_deny
from django.views.decorators.http import require_GET, require_http_methods

from arkme.accounts.models import Account, AccountKey
from arkme.kernel.errors import DependencyUnavailable, Forbidden, NotFound

from ..approvals import ApprovalStatus, PageApproval, approval_decide, approval_for_page
from ..models import ApprovalScope
from ..ports import current_ports

View = Callable[..., HttpResponse]
# Nothing from elsewhere: the page's own images, its inline style and its own form.
CONTENT_SECURITY_POLICY = ("default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; "
                           "form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
DECISIONS = {"approve": True, "decline": False}


def _guarded(view: View) -> View:
    """Signed in, never cached, never framed, no referrer to other sites, nothing loaded from elsewhere."""
    @wraps(view)
    def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = view(request, *args, **kwargs)
        # Same origin only: the handle never leaves for another site, while the form's POST keeps
        # its Origin header (no-referrer would send "null", which Django's CSRF check refuses).
        response["Referrer-Policy"] = "same-origin"
        response["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
        return response

    return never_cache(xframe_options_deny(guarded))


def _account(request: HttpRequest) -> Account:
    account = getattr(request.user, "arkme_account", None)
    if not isinstance(account, Account) or not account.is_active:
        raise PermissionDenied
    return account


def _shown(read: Callable[[], PageApproval]) -> PageApproval:
    """The ledger's answer, its refusals as the page's: someone else's approval is 403, a
    handle that names none 404."""
    try:
        return read()
    except Forbidden as exc:
        raise PermissionDenied from exc
    except NotFound as exc:
        raise Http404 from exc


def _context(handle: str, shown: PageApproval) -> dict[str, Any]:
    grant, details = shown.approval, shown.details
    images = details.get("images")
    count = len(images) if isinstance(images, list) else 0
    return {
        "status": str(shown.status),
        "pending": shown.status is ApprovalStatus.PENDING,
        "title": grant.card.get("title", ""),
        "body": grant.card.get("body", ""),
        "tool_name": grant.tool_name,
        "expires_at": grant.expires_at,
        "images": [reverse("approval-page-image", args=[handle, index]) for index in range(count)],
        "people": details.get("people") or [],
        "id_change": details.get("id_change"),
        "offers_session": ApprovalScope.SESSION in (grant.scopes_offered or []),
    }


@_guarded
@login_required
@require_http_methods(["GET", "POST"])
def approval_page(request: HttpRequest, handle: str) -> HttpResponse:
    account = _account(request)
    if request.method == "POST":
        decision = request.POST.get("decision", "")
        if decision not in DECISIONS:
            return HttpResponse("Choose approve or decline.", status=400, content_type="text/plain")
        scope = request.POST.get("scope", ApprovalScope.ONCE)
        shown = _shown(lambda: approval_decide(handle=handle, account=account, approve=DECISIONS[decision],
                                               scope=scope))
    else:
        shown = _shown(lambda: approval_for_page(handle=handle, account=account))
    return render(request, "toolregistry/approval.html", _context(handle, shown))


@_guarded
@login_required
@require_GET
def approval_image(request: HttpRequest, handle: str, index: int) -> HttpResponse:
    """One image of a pending approval's card, read (and authorised) again for the session's
    account: never a storage address or key in the page."""
    account = _account(request)
    shown = _shown(lambda: approval_for_page(handle=handle, account=account))
    images = shown.details.get("images")
    if shown.status is not ApprovalStatus.PENDING or not isinstance(images, list) or not 0 <= index < len(images):
        raise Http404
    image = images[index]
    try:
        data = current_ports().galleries.item_thumbnail(
            account=AccountKey(account.pk, account.public_id), extension=str(image["extension"]),
            item=str(image["item"]))
    except NotFound as exc:
        raise Http404 from exc
    except DependencyUnavailable:
        return HttpResponse(status=503, headers={"Retry-After": "5"})
    return HttpResponse(data, content_type="image/png", headers={"X-Content-Type-Options": "nosniff"})

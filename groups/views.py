"""The invitation page: the signed-in invitee asks to join; an admin approves later."""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from arkme.accounts.models import Account
from arkme.kernel.errors import Forbidden

from .selectors import chats_of
from .services import InvitationUnusable, invitation_accept, invitation_check_usable, invitation_for_token


def _account(request: HttpRequest) -> Account:
    account = getattr(request.user, "arkme_account", None)
    if account is None or not account.is_active:
        raise PermissionDenied
    return account


def _unusable(request: HttpRequest, reason: str) -> HttpResponse:
    return render(request, "groups/join_unusable.html", {"reason": reason}, status=410)


@login_required
@require_http_methods(["GET", "POST"])
def join(request: HttpRequest, token: str) -> HttpResponse:
    account = _account(request)
    try:
        invitation = invitation_for_token(token, invitee=account)
    except InvitationUnusable as exc:
        return _unusable(request, str(exc))
    except Forbidden as exc:
        raise PermissionDenied from exc
    if request.method == "GET":
        try:
            invitation_check_usable(invitation)
        except InvitationUnusable as exc:
            return _unusable(request, str(exc))
        return render(request, "groups/join.html", {"group": invitation.group, "invitation": invitation})
    try:
        join_request = invitation_accept(token=token, account=account)
    except Forbidden as exc:
        raise PermissionDenied from exc
    except InvitationUnusable as exc:
        return _unusable(request, str(exc))
    return render(request, "groups/join_done.html", {"group": invitation.group, "join_request": join_request})


@login_required
@require_http_methods(["GET"])
def chats(request: HttpRequest) -> HttpResponse:
    """The signed-in person's private chats and their delivered messages."""
    account = _account(request)
    conversations = []
    for chat in chats_of(account).select_related("account_low", "account_high").order_by("-last_activity_at"):
        delivered = chat.messages.filter(delivered_at__isnull=False).select_related("sender").order_by("id")
        conversations.append({"with": chat.other(account), "messages": list(delivered)})
    return render(request, "groups/chats.html", {"conversations": conversations})

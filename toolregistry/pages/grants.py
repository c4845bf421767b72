"""The account's page of standing grants: the live ones, each with a button that revokes it.

Signed-in accounts only; each sees and revokes its own grants alone (any other grant id is
``404``, the same as one that does not exist). The revoke is a POST with Django's CSRF token.
"""
from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import path, reverse
from django.views.decorators.http import require_GET, require_POST

from arkme.accounts.models import Account
from arkme.kernel.errors import NotFound

from ..standing_grants import standing_grant_revoke_by_account, standing_grants_live


def _account(request: HttpRequest) -> Account:
    account: Account | None = getattr(request.user, "arkme_account", None)
    if account is None or not account.is_active:
        raise PermissionDenied
    return account


@login_required
@require_GET
def grants_page(request: HttpRequest) -> HttpResponse:
    grants = standing_grants_live(_account(request))
    return render(request, "toolregistry/grants.html", {"grants": grants})


@login_required
@require_POST
def grant_revoke(request: HttpRequest, grant: int) -> HttpResponse:
    try:
        standing_grant_revoke_by_account(_account(request), grant)
    except NotFound as exc:
        raise Http404("No such standing grant.") from exc
    return HttpResponseRedirect(reverse("standing_grants:grants"))


app_name = "standing_grants"
urlpatterns = [
    path("grants/", grants_page, name="grants"),
    path("grants/<int:grant>/revoke", grant_revoke, name="grant_revoke"),
]

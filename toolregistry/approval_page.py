"""Which calls take their approval on Arkme's own page, and the page's address.

Staff choose the tools per DSH client (the admin) and for every client
(``ARKME_APPROVAL_PAGE_TOOLS``); ``*`` stands for every tool whose approval is pre-execute.
Only those tools ask for approvals, so only they can be named.
"""
from __future__ import annotations

from collections.abc import Iterable

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.urls import reverse

from arkme.conversations.models import DshClient
from arkme.kernel.logs import served_at

from .catalog import CATALOG
from .metadata import Approval

EVERY_TOOL = "*"
# Outside a request and with ARKME_PUBLIC_URL unset (a command), the development address.
FALLBACK_URL = "http://127.0.0.1:8000"


def page_tool_names() -> tuple[str, ...]:
    """The catalog's tools that can take their approval on the page, in catalog order."""
    return tuple(module.METADATA.name for module in CATALOG.modules
                 if module.METADATA.approval is Approval.PRE_EXECUTE)


def page_tools_problems(names: Iterable[object]) -> list[str]:
    """Why a list of page tools is refused (empty when it is good): each name a catalog tool
    whose approval is pre-execute, or ``*`` alone."""
    names = list(names)
    known = set(page_tool_names())
    problems = [f"{name!r} is not a tool whose approval is pre-execute" for name in names
                if name != EVERY_TOOL and name not in known]
    if EVERY_TOOL in names and len(names) > 1:
        problems.append("* stands alone: it already names every tool")
    return problems


def check_page_tools_setting() -> None:
    """Start-up refuses an ``ARKME_APPROVAL_PAGE_TOOLS`` that names an unknown tool."""
    problems = page_tools_problems(settings.ARKME_APPROVAL_PAGE_TOOLS)
    if problems:
        raise ImproperlyConfigured("ARKME_APPROVAL_PAGE_TOOLS: " + "; ".join(problems))


def approval_page_required(*, client: DshClient, tool_name: str) -> bool:
    """Whether this client's call of this (pre-execute) tool is approved on Arkme's page."""
    for names in (settings.ARKME_APPROVAL_PAGE_TOOLS, client.approval_page_tools or ()):
        if EVERY_TOOL in names or tool_name in names:
            return True
    return False


def approval_page_url(handle: str) -> str:
    """The absolute address of the page for ``handle``: on ``ARKME_PUBLIC_URL`` when set (the
    address people's browsers reach; a host may call Arkme on an internal one), else on the
    scheme and host the request being served came to."""
    base = settings.ARKME_PUBLIC_URL or served_at() or FALLBACK_URL
    return base + reverse("approval-page", args=[handle])

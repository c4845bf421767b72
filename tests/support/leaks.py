"""Scanning DSH responses for what must never leave the service."""
from __future__ import annotations

import json
import re
from typing import Any, Iterable

PATTERNS = {
    "fingerprint": re.compile(r"\b[0-9a-f]{64}\b"),
    "object key": re.compile(r"\b(?:blobs|staging|captured)/"),
    "url": re.compile(r"\b(?:https?|s3|file)://", re.I),
    "signed url": re.compile(r"X-Amz-|Signature=", re.I),
    "long base64": re.compile(r"[A-Za-z0-9+/=_-]{100,}"),
    "traceback": re.compile(r"Traceback \(most recent call last\)"),
}
# Handles the contract hands out on purpose; they are checked by decoding, elsewhere.
HANDLE_KEYS = {"source_ref", "candidate_ref", "approval"}
# The approval page's address, handed to DSH on purpose: on Arkme's host, carrying nothing
# but an opaque handle (no id, token, ref or key of anything).
APPROVAL_URL_KEYS = {"approval_url", "url"}  # and an MCP URL question's, approval_page_required's details
APPROVAL_URL = re.compile(r"^https?://[A-Za-z0-9.\[\]:-]+/approvals/[A-Za-z0-9_-]{43}$")
# Static texts the model reads: descriptions and schemas name no user data.
STATIC_KEYS = {"description", "input_schema", "prompt"}


def strings(value: Any, key: str | None = None) -> Iterable[tuple[str | None, str]]:
    if isinstance(value, dict):
        for k, v in value.items():
            if k in STATIC_KEYS:
                continue
            yield from strings(v, k)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item, key)
    elif isinstance(value, str):
        yield key, value


SIGNED_REF_KEYS = {"source_ref", "candidate_ref"}
ACCOUNT_ID = re.compile(r"acc_[a-z0-9]{20}")


def decoded_ref(value: str) -> str:
    """The readable part of a django.core.signing value: its base64 JSON payload."""
    import base64

    payload = value.split(":")[0]
    try:
        return base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)).decode("utf-8", "replace")
    except ValueError:
        return ""


# MCP's sealed state travels through the host: signed, readable, so it is opened and its
# contents scanned like any other response. Its ``arguments`` member is django-mcpz's digest
# of the call's arguments (what binds the state to them), not a stored object's fingerprint.
SEALED_STATE_KEYS = {"requestState"}
INTERNAL_PRINCIPAL = re.compile(r"(?:user|client|session):\d")


def _sealed_state_leaks(text: str, secrets: list[str], account_ids: list[str]) -> list[str]:
    import json

    try:
        state = json.loads(decoded_ref(text))
    except ValueError:
        return [f"requestState that is not signed JSON: {text[:40]!r}"]
    inside = {k: v for k, v in state.items() if k != "arguments"} if isinstance(state, dict) else state
    found = [f"{leak} (inside requestState)" for leak in find_leaks(inside, secrets, account_ids)]
    principal = str(state.get("principal", "")) if isinstance(state, dict) else ""
    if INTERNAL_PRINCIPAL.search(principal):
        found.append(f"internal id inside requestState: {principal[:60]!r}")
    return found


def find_leaks(body: Any, secrets: Iterable[str] = (), account_ids: Iterable[str] = ()) -> list[str]:
    found = []
    secrets = [s for s in secrets if s]
    account_ids = [str(a) for a in account_ids]
    for key, text in strings(body):
        if key in SEALED_STATE_KEYS:
            found.extend(_sealed_state_leaks(text, secrets, account_ids))
            continue
        if key in SIGNED_REF_KEYS:
            inside = decoded_ref(text)
            if ACCOUNT_ID.search(inside) or any(f'"{a}"' in inside or f":{a}}}" in inside for a in account_ids):
                found.append(f"account id inside a {key}: {inside[:80]!r}")
            continue
        if key in HANDLE_KEYS:
            continue
        if key == "text" and text.startswith("{"):
            # An MCP result's text twin of its structured content: scanned as the JSON it is,
            # so its keys count as in the structured content.
            try:
                found.extend(find_leaks(json.loads(text), secrets, account_ids))
                continue
            except ValueError:
                pass
        if key in APPROVAL_URL_KEYS:
            if not APPROVAL_URL.match(text):
                found.append(f"an approval page address that is more than a handle: {text[:80]!r}")
            continue
        for name, pattern in PATTERNS.items():
            if pattern.search(text):
                found.append(f"{name} in {key!r}: {text[:80]!r}")
        for secret in secrets:
            if secret in text:
                found.append(f"secret in {key!r}: {secret[:40]!r}")
    return found

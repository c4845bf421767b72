"""The four tool profiles: names every layer may use (clients are limited to some, sessions
open in one); which kinds of tool each shows is the catalog's business."""
from __future__ import annotations

import enum


class Profile(enum.StrEnum):
    BUSINESS = "business"
    ATOMIC = "atomic"
    HYBRID = "hybrid"
    DISABLED = "disabled"


DEFAULT_PROFILE = Profile.BUSINESS

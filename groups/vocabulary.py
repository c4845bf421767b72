"""The words the group tools answer with: which chats a candidates call searched and what
became of each ref of an add. Kept apart from the services so the result shapes
(``selectors``) name them too."""
from __future__ import annotations

import enum


class Scope(enum.StrEnum):
    """Which chats a candidates call searched (a value of the tool's result)."""

    RECENT = "recent"  # the newest ARKME_CANDIDATE_RECENT_CHATS (a call without a query)
    ALL = "all"  # every private chat of the user (a call with a query)


class Outcome(enum.StrEnum):
    """What became of one ref of an add (a value of the tool's result), or how it was judged."""

    ADDED = "added"
    INVITED = "invited"
    ALREADY_MEMBER = "already_member"
    INVALID_REF = "invalid_ref"
    EXPIRED_REF = "expired_ref"
    NOT_ELIGIBLE = "not_eligible"
    ELIGIBLE = "eligible"  # judged, not yet acted on
    # Judged, not acted on: the same person as an earlier ref of the call (two refs signed at
    # different seconds name one chat). Answered as that person's outcome stands after the
    # earlier ref: a member of an open group (already_member), invited to an approval group.
    REPEATED = "repeated"


# The outcomes a result may carry, in the order a reader should meet them (the rest are
# judgements on the way to one of these).
ANSWERED_OUTCOMES = (Outcome.ADDED, Outcome.INVITED, Outcome.ALREADY_MEMBER, Outcome.INVALID_REF,
                     Outcome.EXPIRED_REF, Outcome.NOT_ELIGIBLE)

"""Cross-tool guidance: prompt text that spans several tools.

Per-tool instructions live in each tool's description. An entry here is selected only when
every tool it ``requires`` is visible in the session's profile and mounted phases, and the
catalog check refuses an entry whose text names any other tool.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Guidance:
    key: str
    requires: tuple[str, ...]
    text: str


GUIDANCE: tuple[Guidance, ...] = (
    Guidance(
        key="context_first",
        requires=("arkme_context",),
        text=(
            "Arkme: call arkme_context before any other Arkme tool and use only the handles it "
            "returns. Never guess or construct ids, revisions or refs."
        ),
    ),
    Guidance(
        key="gallery_add_confirm",
        requires=("arkme_context", "arkme_extension_preview_add"),
        text=(
            "Adding preview images: call arkme_extension_preview_add with action prepare, show "
            "its question to the user word for word, and wait. Only when the user's next message "
            "is 确认 call it again with action confirm and the same operation; if they decline, "
            "call it with action cancel."
        ),
    ),
    Guidance(
        key="gallery_revisions",
        requires=("arkme_extension_preview_delete", "arkme_extension_preview_reorder"),
        text=(
            "Changing a preview gallery: arkme_extension_preview_delete and "
            "arkme_extension_preview_reorder need the gallery's current revision; after any "
            "change use the revision from the latest gallery result. On revision_conflict, read "
            "the gallery again and ask the user before retrying."
        ),
    ),
    Guidance(
        key="group_members",
        requires=("arkme_group_member_candidates", "arkme_group_member_add"),
        text=(
            "Adding people to a group: find them with arkme_group_member_candidates using a "
            "source_ref, then pass their candidate_refs to arkme_group_member_add. Report each "
            "person's outcome; people invited to an approval group join only after an admin "
            "approves."
        ),
    ),
)

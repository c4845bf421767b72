"""Business tools: whole user-facing tasks, shown in the business and hybrid profiles."""
from . import (
    arkme_extension_preview_add,
    arkme_extension_preview_delete,
    arkme_extension_preview_reorder,
    arkme_group_member_add,
    arkme_group_member_candidates,
)

MODULES = (
    arkme_extension_preview_add,
    arkme_extension_preview_delete,
    arkme_extension_preview_reorder,
    arkme_group_member_candidates,
    arkme_group_member_add,
)

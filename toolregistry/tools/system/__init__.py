"""System tools: shown in every profile but ``disabled``."""
from . import arkme_context, arkme_id_change

MODULES = (arkme_context, arkme_id_change)

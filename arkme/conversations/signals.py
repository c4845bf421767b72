"""What the conversation layer tells the domains above it, without importing them."""
from __future__ import annotations

from django.dispatch import Signal

# Sent inside the transaction that ends the sessions, with ``session_ids`` (primary keys):
# whatever a domain keeps for a live session (a pending gallery add) ends with it.
sessions_ended = Signal()

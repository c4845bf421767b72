"""Arkme's own pages for the people its sessions act for (the approval page)."""

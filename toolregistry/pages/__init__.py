"""Arkme's own pages for the signed-in account (not DSH's API)."""

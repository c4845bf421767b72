"""Arkme's own pages for the signed-in account (not DSH's API): the approval page and the
account's standing grants."""

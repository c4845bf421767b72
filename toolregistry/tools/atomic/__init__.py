"""Atomic tools: small building blocks for the atomic and hybrid profiles. None ship yet."""

MODULES: tuple = ()

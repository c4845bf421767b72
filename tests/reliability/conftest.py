from ..galleries.conftest import gs, logos  # noqa: F401  (the gallery fixtures, shared)

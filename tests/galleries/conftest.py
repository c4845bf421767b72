from __future__ import annotations

import pytest


@pytest.fixture
def encoder_keeps(monkeypatch) -> list[bool]:
    """For each libvips encoding from here on, whether it kept its output (confirm, which stores
    the bytes) or only fed the fingerprint (prepare)."""
    from galleries.ingest.normalised import EncodedOutput

    kept: list[bool] = []
    real = EncodedOutput.__init__

    def spy(self, keep):
        kept.append(keep)
        real(self, keep)

    monkeypatch.setattr(EncodedOutput, "__init__", spy)
    return kept

"""Sizes and durations in user-facing text follow the settings they describe."""
from __future__ import annotations

import pytest

from arkme.kernel.text import duration_text, size_text


@pytest.mark.parametrize("size,text", [(5 * 1024 * 1024, "5 MiB"), (20 * 1024 * 1024, "20 MiB"),
                                       (512 * 1024, "512 KiB"), (1500, "1500 bytes"), (1024 ** 3, "1 GiB")])
def test_size_text(size, text):
    assert size_text(size) == text


@pytest.mark.parametrize("seconds,text", [(7 * 86400, "7 days"), (86400, "1 day"), (3600, "1 hour"),
                                          (900, "15 minutes"), (90, "90 seconds"), (1, "1 second")])
def test_duration_text(seconds, text):
    assert duration_text(seconds) == text

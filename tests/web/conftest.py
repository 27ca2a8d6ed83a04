"""The viewer's browser tests: `-m browser` selects them; they run in the default command."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "browser: drives the viewer in headless Chromium (/usr/bin/chromium)"
    )

"""Tests against real server programs beside the machine's PostgreSQL (a pg_auto_failover
cluster, PgBouncer): marked `cluster`, and run by the default test command."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "cluster: starts real servers of its own (pg_auto_failover, PgBouncer)"
    )

"""The suite's own hooks (tests/conftest.py): `untraced` stops coverage for its test only."""

from __future__ import annotations

import sys

import coverage
import pytest


@pytest.mark.untraced
def test_an_untraced_test_runs_without_the_tracer() -> None:
    assert sys.gettrace() is None


def test_the_tests_around_it_are_traced_whenever_coverage_runs() -> None:
    assert (sys.gettrace() is not None) == (coverage.Coverage.current() is not None)

"""A short, hand-written Responses-format coding session with a known outcome.

Goals, constraints, decisions, file edits and test runs around adding rate limiting to
a login endpoint; the extractive summarizer's golden files are made from it.
"""

from __future__ import annotations

from tests.support.histories import Item, call, message, output

LOGIN_RATE_LIMIT: list[Item] = [
    message(
        "user",
        "We need to add rate limiting to the login endpoint before the 2.4.0 release. "
        "The goal is to stop credential-stuffing attacks; success criteria: more than 5 failed "
        "logins per minute from one IP get HTTP 429, and the existing test suite stays green. "
        "Ticket is JIRA-4821. Work on branch feature/login-rate-limit.",
    ),
    message("assistant", "Sure. I'll start by looking at how login is implemented."),
    call("call_1", "grep", pattern="def login", path="src/"),
    output(
        "call_1",
        "src/auth/views.py:42:def login(request):\n"
        "src/auth/tests/test_views.py:10:def login_client():",
    ),
    call("call_2", "read_file", path="src/auth/views.py"),
    output(
        "call_2",
        "from django.http import JsonResponse\n\ndef login(request):\n"
        "    user = authenticate(request)\n    ...",
    ),
    message(
        "assistant",
        "The login view in src/auth/views.py has no throttling. Redis 7.2 is already deployed "
        "in staging and production, so we could keep counters there. An in-memory counter would "
        "be simpler but does not work across the 4 web workers.",
    ),
    message(
        "user",
        "Use Redis, we already run it. Never log raw passwords or full IP addresses because of "
        "GDPR; mask the last octet. Please always add type hints and run ruff before you commit. "
        "The deadline is Friday 14 March, and CI must stay under 10 minutes.",
    ),
    message(
        "assistant",
        "Decided to use a Redis fixed-window counter keyed by the masked IP because it works "
        "across all workers and Redis is already in both environments.",
    ),
    call("call_3", "apply_patch", path="src/auth/ratelimit.py", patch="+class X: ..."),
    output("call_3", "Created src/auth/ratelimit.py (48 lines)"),
    call("call_4", "apply_patch", path="src/auth/views.py", patch="@@ def login ..."),
    output("call_4", "Patched src/auth/views.py"),
    message(
        "assistant",
        "I added a RateLimiter class with a check(ip) method in src/auth/ratelimit.py and wired "
        "it into login() in src/auth/views.py, which now returns 429 after 5 failures per minute.",
    ),
    call("call_5", "run_tests", args="-q tests/auth"),
    output(
        "call_5", "3 passed, 1 failed: test_login_lockout (AssertionError: expected 429, got 401)"
    ),
    message(
        "assistant",
        "test_login_lockout fails because the test freezes time with freezegun while our counter "
        "relies on Redis TTLs. We need to fake Redis in tests; fakeredis is not yet in "
        "requirements-dev.txt. TODO: add fakeredis to requirements-dev.txt and update "
        "tests/auth/test_login.py.",
    ),
    message(
        "user",
        "OK. I prefer fakeredis over mocking Redis by hand. Open a PR against main when it is "
        "green and link #312 in the description. The design notes are at "
        "https://wiki.example.com/auth/rate-limits.",
    ),
    message("assistant", "Will do."),
    message(
        "user",
        "Next, add the fakeredis fixture to tests/conftest.py, make test_login_lockout pass, "
        "then push to feature/login-rate-limit.",
    ),
]


def login_rate_limit_session() -> list[Item]:
    """A fresh copy of the scenario."""
    return [dict(item) for item in LOGIN_RATE_LIMIT]

"""A coding assistant on a small repository: compaction over many turns, protected memory kept.

The assistant greps, reads files, runs the (real) unit tests and fixes a bug in a tiny repo
that this example writes to a temporary directory (the run's context, handed to each tool).
The session lives in `coding_session.db`; a 2,500-token window makes compaction happen
several times. Two things never leave the context:
the developer message with the project rules (its role is never pruned) and every fact the
assistant stored with the `remember` tool (a protected tool).

Offline by default: the SDK's ScriptedModel plays the assistant and the extractive summarizer
writes the summaries. With OPENAI_API_KEY set (and OPENAI_BASE_URL for any OpenAI-compatible
server; OPENAI_MODEL picks the model), a real model answers and summarizes instead.

Every compaction decision is an event: with ARIADNE_URL set they are sent to Ariadne
(`POST {ARIADNE_URL}/ingest`, one trace per compaction), otherwise printed to stderr.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents import (
    Agent,
    RunConfig,
    RunContextWrapper,
    Runner,
    function_tool,
)
from agents.testing import assistant_message, function_call
from online_or_offline import agent_model, summarizer

from sessionstore import SessionStore, text_of
from sessionstore.adapters.agents_sdk import SQLSession, input_filter
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy
from sessionstore.exporters import AriadneExporter, ConsoleExporter, EventBus, Exporter

SESSION = "coding-demo"
WINDOW = 2_500
RULES = (
    "Project rules: never log or store full client IPs (mask the last octet, GDPR); "
    "every change needs a unit test; keep ratelimit.py free of third-party imports."
)

# ----------------------------------------------------------------- the fake repository

REPO = {
    "README.md": """# shop

Login, cart and checkout for the demo shop.

## Development

- Python 3.11, no third-party dependencies in `src/shop`.
- Run the tests: `PYTHONPATH=src python -m unittest discover -s tests -t .`
- Every change needs a unit test; CI must be green before a release.
- Releases go out on Fridays. Tag them `vYYYY.MM.DD`.

## Security

- Never log passwords, tokens or full client IPs; `shop.ratelimit.mask_ip` masks the last octet.
- Login is rate limited: 5 failed attempts per minute per masked IP, then HTTP 429.
""",
    "src/shop/__init__.py": "",
    "src/shop/ratelimit.py": '''"""Fixed-window login rate limiting per masked client IP."""

import time

MAX_FAILURES = 5
WINDOW_SECONDS = 60


def mask_ip(ip):
    """Drop the last octet: full client IPs are never stored (GDPR)."""
    return ".".join(ip.split(".")[:3] + ["0"])


class RateLimiter:
    def __init__(self, clock=time.monotonic):
        self.clock = clock
        self.failures = {}

    def record_failure(self, ip):
        key = mask_ip(ip)
        start, count = self.failures.get(key, (self.clock(), 0))
        self.failures[key] = (start, count + 1)

    def allowed(self, ip):
        start, count = self.failures.get(mask_ip(ip), (self.clock(), 0))
        if self.clock() - start > WINDOW_SECONDS:
            return True
        return count <= MAX_FAILURES
''',
    "src/shop/views.py": '''"""HTTP handlers for login, logout and registration."""

from shop.ratelimit import RateLimiter, mask_ip

limiter = RateLimiter()


def login(request, authenticate, log):
    ip = request["client_ip"]
    if not limiter.allowed(ip):
        log.warning("login blocked for %s", mask_ip(ip))
        return {"status": 429, "error": "too many attempts, try again in a minute"}
    user = authenticate(request["user"], request["password"])
    if user is None:
        limiter.record_failure(ip)
        log.info("failed login for %s from %s", request["user"], mask_ip(ip))
        return {"status": 401, "error": "wrong user name or password"}
    return {"status": 200, "user": user, "session": user.new_session()}


def logout(request, sessions):
    sessions.pop(request.get("session"), None)
    return {"status": 204}


def register(request, users):
    name, password = request["user"], request["password"]
    if len(password) < 12:
        return {"status": 400, "error": "passwords need at least 12 characters"}
    if name in users:
        return {"status": 409, "error": "user name taken"}
    users[name] = password
    return {"status": 201, "user": name}
''',
    "tests/__init__.py": "",
    "tests/test_ratelimit.py": """import unittest

from shop.ratelimit import RateLimiter, mask_ip


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class RateLimiterTest(unittest.TestCase):
    def test_masks_the_last_octet(self):
        self.assertEqual(mask_ip("10.1.2.3"), "10.1.2.0")

    def test_allows_the_first_failures(self):
        limiter = RateLimiter(clock=Clock())
        limiter.record_failure("10.1.2.3")
        self.assertTrue(limiter.allowed("10.1.2.3"))

    def test_blocks_after_five_failures(self):
        limiter = RateLimiter(clock=Clock())
        for _ in range(5):
            limiter.record_failure("10.1.2.3")
        self.assertFalse(limiter.allowed("10.1.2.3"))
""",
}
FIXED_LIMITER = REPO["src/shop/ratelimit.py"].replace(
    "return count <= MAX_FAILURES", "return count < MAX_FAILURES"
)
WINDOW_TEST = """

class WindowTest(unittest.TestCase):
    def test_window_resets_after_a_minute(self):
        clock = Clock()
        limiter = RateLimiter(clock=clock)
        for _ in range(5):
            limiter.record_failure("10.1.2.3")
        clock.now = 61
        self.assertTrue(limiter.allowed("10.1.2.3"))
"""


@dataclass(frozen=True)
class Workspace:
    """The repository the tools work on (the run's context, handed to every tool)."""

    root: Path

    def create(self) -> None:
        for name, text in REPO.items():
            self.path(name).parent.mkdir(parents=True, exist_ok=True)
            self.path(name).write_text(text)

    def path(self, relative: str) -> Path:
        target = (self.root / relative).resolve()
        if not target.is_relative_to(self.root.resolve()):
            raise ValueError(f"{relative!r} is outside the repository")
        return target


Ctx = RunContextWrapper[Workspace]


@function_tool
def read_file(ctx: Ctx, path: str) -> str:
    """Read a file of the repository, with line numbers."""
    lines = ctx.context.path(path).read_text().splitlines()
    return "\n".join(f"{n:4} | {line}" for n, line in enumerate(lines, 1))


@function_tool
def grep(ctx: Ctx, pattern: str) -> str:
    """Search every Python file of the repository for a regular expression."""
    root = ctx.context.root
    hits = [
        f"{file.relative_to(root)}:{n}: {line.strip()}"
        for file in sorted(root.rglob("*.py"))
        for n, line in enumerate(file.read_text().splitlines(), 1)
        if re.search(pattern, line)
    ]
    return "\n".join(hits) or "no matches"


@function_tool
def write_file(ctx: Ctx, path: str, content: str) -> str:
    """Replace a file of the repository with `content`."""
    ctx.context.path(path).write_text(content)
    return f"wrote {path} ({len(content.splitlines())} lines)"


@function_tool
def run_tests(ctx: Ctx) -> str:
    """Run the repository's unit tests."""
    done = subprocess.run(
        [sys.executable, "-m", "unittest", "discover", "-v", "-s", "tests", "-t", "."],
        cwd=ctx.context.root,
        env={**os.environ, "PYTHONPATH": "src"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    return (done.stdout + done.stderr).strip()


@function_tool
def remember(fact: str) -> str:
    """Store a fact that must survive every compaction (a protected tool)."""
    return f"remembered: {fact}"


# ----------------------------------------------------------------- the conversation

PROMPTS = [
    "Users report they can try a wrong password six times before being blocked. Find the code.",
    "Remember: the limit is 5 failed logins per minute per masked IP.",
    "Run the tests.",
    "Fix the limiter and run the tests again.",
    "Where else is the limiter used? Show me the login handler.",
    "Remember: releases go out on Fridays, only with a green CI.",
    "Add a test that the window resets after a minute, and run the suite.",
    "Read the README and tell me how the tests are run.",
    "Summarize what we changed and which rules we must follow.",
]


def _script() -> list[list[Any]]:
    """What the offline assistant answers: one entry per model call."""
    tests = REPO["tests/test_ratelimit.py"]

    def call(name: str, n: int, **args: Any) -> list[Any]:
        return [function_call(name, args, call_id=f"call_{name}_{n}")]

    return [
        call("grep", 1, pattern="RateLimiter|MAX_FAILURES"),
        call("read_file", 1, path="src/shop/ratelimit.py"),
        [assistant_message("allowed() compares `count <= MAX_FAILURES`, so a 6th try passes.")],
        call("remember", 1, fact="limit: 5 failed logins per minute per masked IP"),
        [assistant_message("Noted: 5 failed logins per minute per masked IP.")],
        call("run_tests", 1),
        [assistant_message("test_blocks_after_five_failures fails: the 6th attempt is allowed.")],
        call("write_file", 1, path="src/shop/ratelimit.py", content=FIXED_LIMITER),
        call("run_tests", 2),
        [assistant_message("Fixed: allowed() now uses `count < MAX_FAILURES`; 3 tests pass.")],
        call("grep", 2, pattern="limiter"),
        call("read_file", 2, path="src/shop/views.py"),
        [assistant_message("login() in views.py checks the limiter and answers 429 when over.")],
        call("remember", 2, fact="releases: Fridays only, with a green CI"),
        [assistant_message("Noted: Friday releases, green CI required.")],
        call("write_file", 2, path="tests/test_ratelimit.py", content=tests + WINDOW_TEST),
        call("run_tests", 3),
        [assistant_message("Added WindowTest; all 4 tests pass.")],
        call("read_file", 3, path="README.md"),
        [assistant_message("Tests run with `python -m unittest discover -s tests -t .`.")],
        [
            assistant_message(
                "We fixed the off-by-one in RateLimiter.allowed() and added a window-reset "
                "test. Rules: mask client IPs, test every change, 5 failures per minute, "
                "Friday releases with green CI."
            )
        ],
    ]


# ----------------------------------------------------------------- wiring


def _exporter() -> Exporter:
    url = os.environ.get("ARIADNE_URL")
    return AriadneExporter(url) if url else ConsoleExporter()


async def main() -> None:
    with tempfile.TemporaryDirectory(prefix="shop-") as tmp, EventBus([_exporter()]) as bus:
        workspace = Workspace(Path(tmp))
        workspace.create()
        store = SessionStore(publisher=bus)  # ./sessionstore.db
        policy = CompactionPolicy(
            keep_recent_turns=2,
            keep_tool_io_pairs=2,
            protected_tools=("remember",),  # its calls and outputs are pinned
            strategy="code_delta",
            hard_cap_buffer=400,
        )
        config = CompactionConfig(
            max_context_tokens=WINDOW,
            policy=policy,
            store=store,
            summarizer=summarizer(),
            record_idle_decisions=False,  # events only for calls that compact
        )
        manager = CompactionManager(config)
        session = SQLSession(SESSION, manager=manager)
        await session.clear_session()  # each run starts an empty context; history stays
        earlier = await _compaction_count(store)
        await session.add_items([{"role": "developer", "content": RULES}])
        agent = Agent[Workspace](
            name="coder",
            instructions="You are a careful coding assistant. Use the tools.",
            model=agent_model(_script),
            tools=[read_file, grep, write_file, run_tests, remember],
        )
        run_config = RunConfig(call_model_input_filter=input_filter(manager))
        for prompt in PROMPTS:
            result = await Runner.run(
                agent, prompt, session=session, run_config=run_config, context=workspace
            )
            print(f"> {prompt}\n  {result.final_output}")
        await _report(store, earlier)
        await store.close()  # then the bus closes, sending the last events


async def _compaction_count(store: SessionStore) -> int:
    info = await store.session_info(SESSION)
    return info.compaction_count if info else 0


async def _report(store: SessionStore, earlier: int) -> None:
    """What compaction did in this run, and whether the protected memory is still there."""
    info = await store.session_info(SESSION)
    assert info is not None
    texts = [text_of(item) for item in await store.load_context(SESSION)]
    remembered = [text for text in texts if text.startswith("remembered: ")]
    print(
        f"{len(PROMPTS)} turns, {info.compaction_count - earlier} compactions, "
        f"{info.context_tokens} of {WINDOW} tokens in context now"
    )
    print(f"project rules kept: {'yes' if RULES in texts else 'NO'}")
    print(f"remembered facts kept: {len(remembered)}")
    for fact in remembered:
        print(f"  {fact}")


if __name__ == "__main__":
    asyncio.run(main())

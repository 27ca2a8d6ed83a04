"""The README, run as a reader would: every code block, as pasted, in order, in a fresh directory.

The blocks are extracted from README.md here, not copied into the test, so an edited README
is tested as edited. Python blocks run as scripts and shell blocks in bash (`-e -o pipefail`,
exports carried from block to block) with the venv's `bin` first on PATH, in a directory
holding nothing but the checkout's `compact.yaml`; the model is the OpenAI-compatible test
server (OPENAI_BASE_URL). What a reader supplies is supplied, and nothing else changes:

- the two set-up commands: the test command must be `.ci/run`'s, and is not run again (it is
  this run); the demo command runs from `sessionstore demo` on, in this test's venv;
- the reader's own databases: `conversations.db` (written by the SDK's SQLiteSession) and
  the PostgreSQL URLs of the examples, which become a fresh database holding SDK
  SQLAlchemySession data; SQL blocks run there through `sessionstore query`;
- `--follow` runs until stopped, so it is stopped after a few seconds (exit 124 is its end);
- SKIPPED names the blocks this machine cannot run in a test, each with its reason.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
from agents.memory import SQLiteSession

from sessionstore.compaction import CompactionPolicy
from tests.support.openai_server import OpenAIServer
from tests.support.paths import REPO_ROOT

README = REPO_ROOT / "README.md"
FENCE = re.compile(
    r"^(?P<indent> *)```(?P<language>\w+)\n(?P<body>.*?)^(?P=indent)```$", re.M | re.S
)
SET_UP = "python3 -m venv .venv && .venv/bin/pip install"
# The PostgreSQL URLs the README uses as examples of "your database".
PLACEHOLDER_URLS = ("postgresql+asyncpg://user@host/db", "postgresql+asyncpg://app@db/agents")
FOLLOW_SECONDS = 4
# A phrase of the block -> why a test here does not run it.
SKIPPED: Mapping[str, str] = {
    "cron.schedule": "needs the pg_cron extension, which this PostgreSQL does not have",
    "bench/bench_store.py": "benchmarks run for minutes; CI runs the bench scripts' own tests",
    "SESSIONSTORE_SOAK_RUNS=1000": "a thousand soak runs take hours; CI runs 16 of them",
    '-m "not slow and not postgresql"': "the everyday test subset: this run is the whole suite",
}


@dataclass(frozen=True)
class Block:
    """One fenced code block of the README."""

    language: str
    body: str
    line: int


def readme_blocks() -> list[Block]:
    text = README.read_text(encoding="utf-8")
    return [
        Block(
            match["language"],
            "\n".join(line.removeprefix(match["indent"]) for line in match["body"].splitlines()),
            text.count("\n", 0, match.start()) + 1,
        )
        for match in FENCE.finditer(text)
    ]


def _skip_reason(block: Block) -> str | None:
    return next((why for phrase, why in SKIPPED.items() if phrase in block.body), None)


class Reader:
    """A shell in a fresh directory that remembers its exports between blocks."""

    def __init__(self, workdir: Path, pg_url: str, model_url: str) -> None:
        self.workdir = workdir
        self.pg_url = pg_url
        self.state = workdir.parent / "exports.sh"
        self.state.write_text("", encoding="utf-8")
        keep = {
            k: v for k, v in os.environ.items() if not k.startswith(("SESSIONSTORE_", "OPENAI"))
        }
        self.env = {
            **keep,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "OPENAI_API_KEY": "test-key",
            "OPENAI_BASE_URL": model_url,
            "OPENAI_AGENTS_DISABLE_TRACING": "1",
            "COLUMNS": "200",
        }

    def bash(self, script: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        for placeholder in PLACEHOLDER_URLS:
            script = script.replace(placeholder, self.pg_url)
        wrapped = f"source {self.state}\n{script}\nexport -p > {self.state}\n"
        return subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", wrapped],
            capture_output=True,
            text=True,
            cwd=self.workdir,
            env=self.env,
            timeout=timeout,
        )

    def run(self, block: Block) -> subprocess.CompletedProcess[str]:
        if block.language == "python":
            script = self.workdir.parent / f"block_{block.line}.py"
            script.write_text(block.body, encoding="utf-8")
            return self.bash(f"python {script}")
        if block.language == "sql":
            sql = block.body.replace("'", "'\\''")
            return self.bash(f"sessionstore query '{sql}' --url {PLACEHOLDER_URLS[0]}")
        if block.body.startswith(SET_UP):
            return self._set_up(block)
        lines = [
            f"timeout {FOLLOW_SECONDS} {line} || [ $? = 124 ]" if "--follow" in line else line
            for line in block.body.splitlines()
        ]
        return self.bash("\n".join(lines))

    def _set_up(self, block: Block) -> subprocess.CompletedProcess[str]:
        install, _, then = block.body.rpartition(" && .venv/bin/")
        if then.startswith("python -m pytest"):  # the test command: this very run
            ci = (REPO_ROOT / ".ci" / "run").read_text(encoding="utf-8")
            runs = [line.partition(" || ")[0] for line in ci.splitlines()]
            assert block.body in runs, "README's test command differs from .ci/run's"
            return subprocess.CompletedProcess(block.body, 0, "", "")
        assert install.startswith(SET_UP), block.body
        return self.bash(then)


def _prepare_the_readers_databases(workdir: Path, pg_url: str) -> None:
    """What the README assumes a reader has: SDK sessions in SQLite and in PostgreSQL."""

    async def write() -> None:
        local = SQLiteSession("ada", str(workdir / "conversations.db"))
        await local.add_items([{"role": "user", "content": "Hi, I'm Ada."}])
        local.close()
        remote = SQLAlchemySession.from_url("bob", url=pg_url, create_tables=True)
        await remote.add_items([{"role": "user", "content": "Hi, I'm Bob."}])
        await remote.engine.dispose()

    asyncio.run(write())


def assert_the_demo_kept_every_input_in_budget(stdout: str) -> None:
    """The demo's default numbers, end to end through the command: 3 x 128k tokens through
    one session, every model input (tool loops included) under the policy's budget."""
    budget = CompactionPolicy().budget(128_000)  # the demo runs the default policy
    figures = re.search(
        r"([\d,]+) tokens of traffic .*; largest model input ([\d,]+) tokens "
        r"\(window 128,000\): never overflowed",
        stdout,
    )
    assert figures is not None, stdout[-2000:]
    traffic, largest = (int(figure.replace(",", "")) for figure in figures.groups())
    assert traffic >= 3 * 128_000 and largest <= budget
    rounds = [int(n) for n in re.findall(r"^(\d+)\tthreshold", stdout, re.M)]  # piped: plain
    assert len(rounds) >= 3 and rounds == list(range(1, len(rounds) + 1))
    active = re.search(r"Active context now: [\d,]+ items, ([\d,]+) tokens", stdout)
    assert active is not None and int(active[1].replace(",", "")) <= budget
    assert f"<COMPACT-SUMMARY v{len(rounds)}>" in stdout


def test_the_readme_blocks_are_found() -> None:
    blocks = readme_blocks()
    languages = {block.language for block in blocks}
    assert {"python", "bash", "sql"} <= languages and len(blocks) >= 15
    assert all(block.body.strip() for block in blocks)


def test_every_readme_block_runs_as_pasted_in_order(tmp_path: Path, fresh_pg_url: str) -> None:
    workdir = tmp_path / "reader"
    workdir.mkdir()
    shutil.copy(REPO_ROOT / "compact.yaml", workdir)
    _prepare_the_readers_databases(workdir, fresh_pg_url)
    ran: list[int] = []
    with OpenAIServer() as server:
        reader = Reader(workdir, fresh_pg_url, server.base_url)
        for block in readme_blocks():
            if _skip_reason(block) is not None:
                continue
            result = reader.run(block)
            assert result.returncode == 0, (
                f"README.md line {block.line} ({block.language}) failed:\n{block.body}\n"
                f"--- stdout\n{result.stdout[-3000:]}\n--- stderr\n{result.stderr[-3000:]}"
            )
            assert "Traceback" not in result.stderr, (block.line, result.stderr)
            if block.language == "bash" and "sessionstore demo" in block.body:  # the command,
                assert_the_demo_kept_every_input_in_budget(result.stdout)  # not a mention
            ran.append(block.line)
    assert len(ran) == len(readme_blocks()) - len(SKIPPED)
    # The quick start, the examples' default and the CLI met in one database file.
    assert (workdir / "sessionstore.db").exists() and (workdir / "sessionstore-demo.db").exists()


@pytest.mark.parametrize("phrase", list(SKIPPED))
def test_every_skipped_block_is_still_in_the_readme(phrase: str) -> None:
    assert sum(phrase in block.body for block in readme_blocks()) == 1

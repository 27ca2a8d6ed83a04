"""The core without extras: run by .ci/run in a venv with `pip install .` and no Agents SDK.

Imports the kernel, compacts a session with the extractive summarizer, runs the
chat-loop adapter and the CLI, and checks that `openai-agents` is not installed.
"""

from __future__ import annotations

import asyncio
import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path

import sessionstore
import sessionstore.compaction
from sessionstore import SessionStore
from sessionstore.adapters.chat import ChatConversation
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy


async def main(folder: Path) -> None:
    assert importlib.util.find_spec("agents") is None, "openai-agents must not be installed"
    url = f"sqlite:///{folder / 'core.db'}"
    async with SessionStore(url) as store:
        policy = CompactionPolicy(keep_recent_turns=1, keep_tool_io_pairs=0)
        manager = CompactionManager(CompactionConfig(storage=store, policy=policy))
        chat = ChatConversation(manager, instructions="Be brief.")
        for turn in range(6):
            await chat.prepare("core", [{"role": "user", "content": f"Remember fact {turn}."}])
            await chat.record("core", {"role": "assistant", "content": f"Noted fact {turn}."})
        outcome = await manager.compact("core", trigger="manual")
        assert outcome.compacted, outcome.skipped_reason
        sent = await chat.prepare("core")
        assert "COMPACT-SUMMARY" in str(sent[1]["content"]), sent


def cli(folder: Path) -> None:
    url = f"sqlite:///{folder / 'core.db'}"
    cli = Path(sys.executable).with_name("sessionstore")
    listed = subprocess.run(
        [cli, "sessions", "list", "--url", url], capture_output=True, text=True, check=True
    )
    assert "core" in listed.stdout, listed.stdout
    demo = subprocess.run([cli, "demo"], capture_output=True, text=True, cwd=folder)
    assert demo.returncode == 2 and "sessionstore[agents]" in demo.stderr, demo.stderr
    print(f"core without extras OK: {sessionstore.__file__} (no Agents SDK)")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as folder:
        asyncio.run(main(Path(folder)))
        cli(Path(folder))

"""Every printing command through a real pipe: records whole, nothing boxed or cut.

Each command runs as its own process with stdout a pipe (`sessionstore ... | grep`), over
a session whose id and stored text are long (past any terminal width), end in a needle,
and hold `[brackets]`, rich markup, ANSI escape codes and a secret. What must come out:
the needle (nothing cut), no box-drawing character, the markup as written, the escape
codes shown as `\\x1b` / `\\u001b` text (escaped, never raw), the secret redacted.

The commands are enumerated from the Typer app, so a new command fails
`test_every_command_is_covered` until it is listed here (or exempted, with the reason).
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path

import pytest
import typer
from agents import SQLiteSession

from sessionstore import CallUsage, SessionStore
from sessionstore._jobs._retention import RetentionAction, RetentionPolicy, set_policy
from sessionstore._security._crypto import Keyring, LocalKey
from sessionstore.cli import app
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy
from tests.support.cli import run_process
from tests.support.histories import coding_session

NEEDLE = "NEEDLE-7f3a"
SECRET = "sk-proj-Zz9Yy8Xx7Ww6Vv5Uu4Tt3"
BRACKETS = "[brackets]"
MARKUP = "[bold]x[/bold]"
ANSI = "\x1b[31mred\x1b[0m"
# Long enough that a terminal-width table would cut it; the needle is at the very end.
SID = f"{MARKUP} {BRACKETS} " + "w" * 200 + f" {NEEDLE}"
TEXT = f"{MARKUP} {BRACKETS} {ANSI} " + "filler " * 40 + f"key {SECRET} {NEEDLE}"
BOXES = set("─│┃━┏┓┗┛┡┩└┘┌┐├┤┬┴┼╇╭╮╰╯═║")


def _seed(url: str, sdk_file: Path) -> None:
    async def seed() -> None:
        async with SessionStore(url, create_tables=True) as store:
            manager = CompactionManager(
                CompactionConfig(
                    store=store,
                    policy=CompactionPolicy(
                        keep_recent_turns=2, keep_tool_io_pairs=0, recent_user_token_budget=0
                    ),
                )
            )
            await manager.append(SID, [{"role": "user", "content": TEXT}, *coding_session(6)])
            await manager.compact(SID)
            await store.append(SID, [{"role": "user", "content": TEXT}])
            sent = await store.load_context(SID)
            call = await store.record_model_call(SID, sent, model="gpt-4o")
            await store.record_usage(SID, [CallUsage(100, 0, 10, 0)], calls=[(call, "gpt-4o")])
            await set_policy(store, RetentionPolicy("old", RetentionAction.DELETE_EVENTS, 30))
        sdk = SQLiteSession(f"imported {SID}", str(sdk_file))
        await sdk.add_items([{"role": "user", "content": TEXT}])
        sdk.close()

    asyncio.run(seed())
    keys = Keyring([LocalKey.generate("k0")], active="k0")
    Keyring.write_file(sdk_file.parent / "keys.json", keys)
    line = {"session_id": f"exported {SID}", "item": {"role": "user", "content": TEXT}}
    (sdk_file.parent / "export.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seeded database and an SDK database to import, made once."""
    folder = tmp_path_factory.mktemp("piped")
    _seed(f"sqlite:///{folder / 'sessionstore.db'}", folder / "sdk.db")
    return folder


@pytest.fixture
def workdir(template: Path, tmp_path: Path) -> Path:
    """A copy of the seeded files: commands that write get their own."""
    for name in ("sessionstore.db", "sdk.db", "export.jsonl", "keys.json"):
        shutil.copy(template / name, tmp_path / name)
    return tmp_path


# command path -> (arguments after it, whether it prints the stored text or the session id)
COMMANDS: dict[str, tuple[list[str], bool]] = {
    "sessions list": ([], True),
    "sessions show": ([SID], True),
    "sessions export": ([SID], True),
    "sessions rewind": ([SID, "--to", "1", "--yes"], False),
    "sessions fork": ([SID, "--to", "branch"], False),
    "sessions delete": ([SID, "--yes"], False),
    "events": (["--all"], True),
    "query": (["SELECT session_id, payload FROM messages ORDER BY seq"], True),
    "search": ([NEEDLE], True),
    "usage": ([], True),
    "schema": ([], False),
    "verify": ([], True),
    "doctor": ([], False),
    "migrate": ([], False),
    "compact": ([SID, "--diff"], True),
    "archive list": ([], True),
    "archive show": ([SID], True),
    "retention run": (["--dry-run"], False),
    "retention policy list": ([], False),
    "retention policy set": (["new", "--action", "delete_events", "--days", "9"], False),
    "retention policy delete": (["old"], False),
    "keys generate": (["k1", "--key-file", "new-keys.json"], False),
    "keys status": ([], False),
    "keys rotate": ([], False),
    "keys retire": (["nope"], False),
    "import": (["sdk.db"], True),
    "sessions import": (["export.jsonl"], False),
}
# Commands run without the seeded database's --url, with the reason.
OWN_DATABASE = {
    "keys generate": "writes a key file, opens no database",
    "import": "its source is the argument; --url is the default ./sessionstore.db",
}
EXEMPT = {
    "demo": "writes its own generated sessions (no stored text of ours); its tables go "
    "through the same console as every other (test_tables_into_a_pipe_are_plain_lines)",
    "serve": "runs the web viewer until stopped: it prints its address, the pages are HTML "
    "(escaped and redacted by the viewer's own tests)",
}


def _leaves(group: typer.core.TyperGroup, prefix: str = "") -> list[str]:
    found = []
    for name in group.list_commands(None):  # type: ignore[arg-type]
        command = group.get_command(None, name)  # type: ignore[arg-type]  # loads it
        path = f"{prefix}{name}"
        if hasattr(command, "commands"):
            found += _leaves(command, f"{path} ")  # type: ignore[arg-type]
        else:
            found.append(path)
    return found


def test_every_command_is_covered() -> None:
    every = set(_leaves(typer.main.get_command(app)))  # type: ignore[arg-type]
    assert every == set(COMMANDS) | set(EXEMPT), "list the new command in COMMANDS or EXEMPT"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_piped_output_is_whole_plain_literal_and_redacted(workdir: Path, command: str) -> None:
    arguments, prints_text = COMMANDS[command]
    url = [] if command in OWN_DATABASE else ["--url", "sessionstore.db"]
    keys = {"SESSIONSTORE_KEY_FILE": "keys.json"} if command.startswith("keys") else {}
    done = run_process(*command.split(), *arguments, *url, cwd=workdir, env=keys)
    _judge(done, command, prints_text)


def _judge(done: subprocess.CompletedProcess[str], command: str, prints_text: bool) -> None:
    out = done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode in (0, 1, 2), done.stderr
    if command == "keys retire":  # an unknown key: a one-line refusal, nothing printed
        assert done.returncode == 2 and out == "" and "unknown key" in done.stderr
        return
    assert done.returncode == 0 or command == "doctor", (done.returncode, done.stderr)
    assert BOXES.isdisjoint(out + done.stderr), f"boxes in:\n{out}"
    assert "\x1b" not in out + done.stderr  # escaped, never raw (see the module's doc)
    assert SECRET not in out + done.stderr
    if prints_text:
        assert NEEDLE in out, f"{NEEDLE} cut from:\n{out}"
        literal = MARKUP in out or MARKUP.replace("/", "\\/") in out  # as text, or in JSON
        assert literal and BRACKETS in out
    if TEXT[:30] in out or "\\x1b" in out or "\\u001b" in out:  # the text printed: ANSI too
        assert "\\x1b[31mred" in out or "\\u001b[31mred" in out


def test_tables_into_a_pipe_are_plain_lines(workdir: Path) -> None:
    """One record per line, cells separated by tabs, a header first; no title, no box."""
    done = run_process("sessions", "list", "--url", "sessionstore.db", cwd=workdir)
    lines = done.stdout.splitlines()
    assert lines[0].split("\t")[:3] == ["session_id", "items", "tokens"]
    assert [line.split("\t")[0] for line in lines[1:]] == [SID]


def test_show_into_a_pipe_gives_each_rows_whole_text_on_one_line(workdir: Path) -> None:
    done = run_process("sessions", "show", SID, "--url", "sessionstore.db", cwd=workdir)
    lines = [line for line in done.stdout.splitlines() if line.endswith(NEEDLE)]
    assert lines, done.stdout
    line = lines[-1]
    assert "filler " * 40 in line and line.split("\t")[0].isdigit()
    assert "<REDACTED" in line or "[REDACTED" in line or "***" in line


def test_a_terminal_still_gets_the_drawn_table(workdir: Path) -> None:
    """SESSIONSTORE_TERMINAL=1 is a terminal (documented): the boxed table as before, its
    text column a preview."""
    forced = {"SESSIONSTORE_TERMINAL": "1", "COLUMNS": "200"}
    done = run_process("sessions", "show", SID, "--url", "sessionstore.db", cwd=workdir, env=forced)
    assert done.returncode == 0, done.stderr
    assert "┏" in done.stdout and "│" in done.stdout
    rows = [line for line in done.stdout.splitlines() if "filler" in line]
    assert rows and all(NEEDLE not in line for line in rows)  # a preview: the needle is past it
    assert "\\x1b[31mred" in done.stdout  # stored escapes still shown as text
    assert SECRET not in done.stdout

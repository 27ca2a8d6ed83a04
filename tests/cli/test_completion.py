"""Shell completion (typer's add_completion): the script is shown and installed, and the
installed command completes its own subcommands."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

COMMAND = str(Path(sys.executable).parent / "sessionstore")


def _run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    # The shell is named on the command line: without this, typer asks shellingham for the
    # parent process's shell and ignores the name, so a run with no shell above it (a
    # detached CI job) failed with "Shell  not supported".
    fixed = {"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"}
    return subprocess.run(
        [COMMAND, *args],
        capture_output=True,
        text=True,
        env={**os.environ, **fixed, **env},
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_show_completion_prints_the_bash_script() -> None:
    done = _run("--show-completion", "bash")
    assert done.returncode == 0, done.stderr
    assert "_sessionstore_completion" in done.stdout and "complete_bash" in done.stdout


def test_install_completion_writes_the_users_shell_files(tmp_path: Path) -> None:
    done = _run("--install-completion", "bash", HOME=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "sessionstore" in (tmp_path / ".bashrc").read_text(encoding="utf-8")
    assert (tmp_path / ".bash_completions" / "sessionstore.sh").is_file()


def test_the_completion_completes_subcommands() -> None:
    done = _run(
        _SESSIONSTORE_COMPLETE="complete_bash",
        COMP_WORDS="sessionstore sessions im",
        COMP_CWORD="2",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["import"]

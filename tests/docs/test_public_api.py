"""The public face: packages export every public name; everything behind them is private.

Users import from `sessionstore` and the documented subpackages only; the README,
the docs and the examples must do the same, so what they show keeps working when a
private module moves.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re

import pytest

from tests.support.paths import REPO_ROOT

PUBLIC = (
    "sessionstore",
    "sessionstore.compaction",
    "sessionstore.archive",
    "sessionstore.exporters",
    "sessionstore.adapters.agents_sdk",
    "sessionstore.adapters.chat",
)
# Modules that are entry points, not API: the command line and `python -m sessionstore.cli`.
APPLICATIONS = ("sessionstore/cli/__init__.py", "sessionstore/cli/__main__.py")


@pytest.mark.parametrize("name", PUBLIC)
def test_every_name_in_all_resolves_and_says_what_it_is_for(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    assert len(exported) == len(set(exported))
    for public in exported:
        value = getattr(module, public)
        assert public in dir(module)
        if inspect.isclass(value) or inspect.isfunction(value):
            assert inspect.getdoc(value), f"{name}.{public} has no docstring"


def test_implementation_modules_are_private() -> None:
    public_files = {f"{name.replace('.', '/')}/__init__.py" for name in PUBLIC} | {
        "sessionstore/adapters/chat.py",
        "sessionstore/adapters/__init__.py",
        *APPLICATIONS,
    }
    offenders = sorted(
        path.relative_to(REPO_ROOT).as_posix()
        for path in (REPO_ROOT / "sessionstore").rglob("*.py")
        if not path.name.startswith("_")
        and path.relative_to(REPO_ROOT).as_posix() not in public_files
    )
    assert offenders == []


def _user_facing_imports() -> list[tuple[str, str, str]]:
    found: list[tuple[str, str, str]] = []
    fence = re.compile(r"```python\n(.*?)```", re.S)
    for path in [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]:
        for block in fence.findall(path.read_text(encoding="utf-8")):
            found += _imports(path.name, block)
    for path in sorted((REPO_ROOT / "examples").glob("*.py")):
        found += _imports(path.name, path.read_text(encoding="utf-8"))
    return found


def _imports(where: str, source: str) -> list[tuple[str, str, str]]:
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a fragment with "..." placeholders: take its import lines alone
        lines = [line for line in source.splitlines() if line.startswith(("from ", "import "))]
        tree = ast.parse("\n".join(lines))
    return [
        (where, node.module or "", alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sessionstore")
        for alias in node.names
    ]


def test_readme_docs_and_examples_import_only_public_names() -> None:
    imports = _user_facing_imports()
    assert len(imports) > 30  # the scan really read the snippets
    wrong = sorted(
        f"{where}: from {module} import {name}"
        for where, module, name in imports
        if module not in PUBLIC or name not in importlib.import_module(module).__all__
    )
    assert wrong == []


def test_the_core_names_do_not_import_the_agents_sdk_or_the_otlp_exporter() -> None:
    import subprocess
    import sys

    probe = (
        "import sys, sessionstore, sessionstore.compaction, sessionstore.exporters;"
        "sessionstore.SessionStore; sessionstore.compaction.ExtractiveSummarizer;"
        "print(sorted(m for m in ('agents', 'opentelemetry.sdk') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"

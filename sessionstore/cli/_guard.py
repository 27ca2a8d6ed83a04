"""How every command ends: exit codes, usage errors as one line, user errors mapped.

Kept apart from _common (which opens stores, and so imports SQLAlchemy and the kernel) so
that the root command can be built, and `sessionstore --help` or a mistyped option
answered, without importing any of that: a usage error is printed with the standard
library alone, and _common is imported only when a command runs.
"""

from __future__ import annotations

import sys
from typing import Any, Final

import typer
from typer.core import TyperCommand, TyperGroup

from ._exit_codes import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from ._text import visible

try:  # typer >= 0.22 vendors click
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - older typer
    from click import exceptions as click_errors  # type: ignore[no-redef]

# Plain help and errors: no `<bool>` noise, no boxes, help text never read as markup.
CLI_SETTINGS: Final[dict[str, Any]] = {
    "rich_markup_mode": None,
    "pretty_exceptions_enable": False,
    "context_settings": {"help_option_names": ["-h", "--help"]},
}


def command_group(**options: Any) -> typer.Typer:
    """A sub-command group with the CLI's common settings."""
    return typer.Typer(**CLI_SETTINGS, **options)


def _say(message: str) -> None:
    """One line on stderr, its control characters shown as escapes (it may quote input)."""
    print(visible(message), file=sys.stderr)


class _OneLineUsage:
    """Usage errors as one line on stderr (what was wrong, where to read more), exit 2."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        kwargs["standalone_mode"] = False
        try:
            code = super().main(*args, **kwargs)  # type: ignore[misc]
        except click_errors.NoArgsIsHelpError as error:
            error.show()
            sys.exit(error.exit_code)
        except click_errors.UsageError as error:
            where = error.ctx.command_path if error.ctx is not None else "sessionstore"
            _say(f"error: {error.format_message()} (`{where} -h` lists the options)")
            sys.exit(EXIT_USAGE)
        except click_errors.ClickException as error:
            error.show()
            sys.exit(error.exit_code)
        except typer.Abort:
            _say("aborted")
            sys.exit(EXIT_FAILED)
        sys.exit(code if isinstance(code, int) else EXIT_OK)


class _MapsUserErrors:
    """Runs a command inside `user_errors` (imported then: the command needs _common)."""

    def invoke(self, ctx: Any) -> Any:
        from ._common import user_errors

        with user_errors():
            return super().invoke(ctx)  # type: ignore[misc]


class GuardedGroup(_OneLineUsage, _MapsUserErrors, TyperGroup):
    """A command group whose every subcommand maps user errors to exit codes."""


class GuardedCommand(_OneLineUsage, _MapsUserErrors, TyperCommand):
    """A single command (compactctl) with the same error mapping."""

"""Commands the product prints for a user to run (hints, placeholders, error messages).

A session id is user data: one that starts with `-` would be read as an option if it came
before the options, and one holding `$(...)` would run if it were not quoted. So every
printed command puts its options first, then `--`, then its shell-quoted positional
arguments: the CLI (click) takes every word after `--` as an argument.
"""

from __future__ import annotations

import shlex

__all__ = ["cli_command"]


def cli_command(subcommand: str, *arguments: str, options: str = "") -> str:
    """`sessionstore {subcommand} {options} -- {arguments}`, each argument one shell word.

    `subcommand` and `options` are the product's own words (never user data), so they are
    printed as given; `options` may hold a placeholder such as `--url URL`.
    """
    words = ["sessionstore", subcommand]
    if options:
        words.append(options)
    if arguments:
        words += ["--", *(shlex.quote(argument) for argument in arguments)]
    return " ".join(words)

"""`--where CONDITION`: which sessions a bulk command works on, chosen by SQL.

The condition is never pasted into a statement. It is parsed (by the SQL parser `query`
uses) as the WHERE clause of `SELECT session_id FROM sessions WHERE ...`; anything that
parses as more than that (a second statement, a UNION, an ORDER BY, a join, a comment
that closes the clause) is refused. The statement is then re-printed from the parsed tree
and handed to `sessionstore query`'s own guard and runner (`_query_guard.vetted`, then a
read-only transaction with a timeout): subqueries may read the documented tables only,
never the catalogs, and functions with effects are refused as in `query`.
"""

from __future__ import annotations

import logging
from typing import Final

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from .._errors import QueryRejectedError

_DIALECTS: Final = {"sqlite": "sqlite", "postgresql": "postgres"}
# The only parts the parsed statement may have: the column, the table, the condition.
_SHAPE: Final = frozenset({"expressions", "from", "from_", "where"})


def _refused(reason: str) -> QueryRejectedError:
    return QueryRejectedError(f"refused: {reason}")


def where_statement(condition: str, dialect: str) -> str:
    """`SELECT session_id FROM sessions WHERE <condition>` re-printed from its parse, or
    QueryRejectedError("refused: ...") when the condition is more than a condition. The
    result still goes through `_query_guard.vetted` (the caller runs it as `query` does)."""
    if not condition.strip():
        raise _refused("the condition is empty")
    read = _DIALECTS.get(dialect, dialect)
    logging.getLogger("sqlglot").setLevel(logging.ERROR)
    try:
        parsed = [
            s
            for s in sqlglot.parse(f"SELECT session_id FROM sessions WHERE {condition}", read=read)
            if s is not None
        ]
    except (ParseError, TokenError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else "a syntax error"
        raise _refused(f"the condition does not parse as SQL ({first})") from None
    except RecursionError:
        raise _refused("the condition is nested too deeply to check") from None
    if len(parsed) != 1:
        raise _refused("one condition only: it must not end the statement or start another")
    tree = parsed[0]
    where = tree.args.get("where")
    extra = sorted(k for k, v in tree.args.items() if v and k not in _SHAPE)
    if not isinstance(tree, exp.Select):
        raise _refused("the condition must be a WHERE condition, not a query of its own")
    if not isinstance(where, exp.Where) or extra:
        raise _refused(
            "the condition must be a WHERE condition over `sessions` alone "
            f"(it also made {', '.join(extra) or 'no condition'})"
        )
    # Re-built from the parsed condition alone: nothing typed reaches the database as text.
    rebuilt = exp.select("session_id").from_("sessions").where(where.this.copy())
    try:
        return rebuilt.sql(dialect=read, comments=False)
    except RecursionError:
        raise _refused("the condition is nested too deeply to check") from None

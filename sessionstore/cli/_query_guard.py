"""What `sessionstore query` agrees to run: one SELECT over the documented tables.

The statement is parsed with a real SQL parser (sqlglot) in the database's dialect, and
what runs is the parser's own re-printing of the tree it checked, never the text as typed:
a comment or quote the parser reads one way and the database another (the nested block
comment trick) cannot smuggle a second statement past the check. Allowed: SELECT, set
operations, VALUES and CTEs over the documented tables; functions that only compute.
Refused: any write or DDL, COPY, SELECT INTO, row locks, other schemas and catalogs, and
functions with effects outside the query (files, processes, other sessions, locks, sleeps,
settings) or that make huge values. The database adds its own guards below this one:
a read-only transaction, a timeout, and (PostgreSQL) an optional least-privileged role.
"""

from __future__ import annotations

import re
from typing import Final

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from .._errors import QueryRejectedError
from .._schema import VIEWS, metadata

DOCUMENTED_TABLES: Final = (frozenset(metadata.tables) - {"alembic_version"}) | frozenset(VIEWS)
_DIALECTS: Final = {"sqlite": "sqlite", "postgresql": "postgres"}
_SCHEMAS: Final = {"sqlite": frozenset({"", "main"}), "postgresql": frozenset({"", "public"})}
_ROOTS: Final = (exp.Select, exp.Union, exp.Intersect, exp.Except, exp.Values, exp.Subquery)
_FORBIDDEN_NODES: Final = (
    exp.Insert,
    exp.Update,
    exp.Delete,
    exp.Merge,
    exp.Create,
    exp.Drop,
    exp.Alter,
    exp.Command,
    exp.Copy,
    exp.Set,
    exp.Transaction,
    exp.Commit,
    exp.Rollback,
    exp.Pragma,
    exp.Into,
    exp.Lock,
)
# Functions the parser knows by class that still make values of any size.
_FORBIDDEN_FUNCTIONS: Final = (exp.Repeat, exp.Pad)
# Functions the parser does not model (exp.Anonymous) are refused unless listed here:
# date, JSON and formatting helpers of SQLite and PostgreSQL that only compute.
_ALLOWED_UNMODELLED: Final = frozenset(
    {
        "datetime",
        "julianday",
        "unixepoch",
        "printf",
        "format",
        "total",
        "json_each",
        "json_tree",
        "json_type",
        "json_valid",
        "json_array_length",
        "jsonb_array_length",
        "json_extract_path_text",
        "jsonb_extract_path_text",
        "jsonb_typeof",
        "json_typeof",
        "age",
        "date_part",
        "to_timestamp",
        "split_part",
        "char_length",
        "octet_length",
        "percentile_cont",
        "percentile_disc",
        "row_number",
        "rank",
        "dense_rank",
        "ntile",
        "lag",
        "lead",
        "first_value",
        "last_value",
    }
)
_READ_ONLY_PRAGMAS: Final = frozenset(
    {
        "table_info",
        "table_xinfo",
        "table_list",
        "index_list",
        "index_info",
        "index_xinfo",
        "foreign_key_list",
        "user_version",
        "page_count",
        "page_size",
        "journal_mode",
        "encoding",
        "compile_options",
    }
)
_PRAGMA: Final = re.compile(r"^\s*pragma\s+(\w+)\s*(?:\(\s*[\w\"'.]+\s*\))?\s*;?\s*$", re.I)
_EXPLAIN: Final = re.compile(r"^\s*explain(\s+query\s+plan)?\s+", re.I)


def _refused(reason: str) -> QueryRejectedError:
    return QueryRejectedError(f"refused: {reason}")


def vetted(sql: str, dialect: str) -> str:
    """The statement to run for `sql` on `dialect` ("sqlite", "postgresql"), or
    QueryRejectedError("refused: ...") saying what is not allowed."""
    pragma = _PRAGMA.match(sql)
    if pragma is not None:
        if dialect == "sqlite" and pragma.group(1).lower() in _READ_ONLY_PRAGMAS:
            return sql
        reason = "only read-only PRAGMAs are allowed (table_info, index_list, ...)"
        raise _refused(reason if dialect == "sqlite" else "PRAGMA is SQLite's")
    explain = _EXPLAIN.match(sql)
    prefix, body = (explain.group(0).strip() + " ", sql[explain.end() :]) if explain else ("", sql)
    tree = _one_statement(body, _DIALECTS.get(dialect, dialect))
    _check(tree, dialect)
    return prefix + tree.sql(dialect=_DIALECTS.get(dialect, dialect), comments=False)


def _one_statement(sql: str, dialect: str) -> exp.Expr:
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except (ParseError, TokenError) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else "a syntax error"
        raise _refused(f"it does not parse as SQL ({first})") from None
    if len(statements) != 1:
        raise _refused("only one statement is allowed" if statements else "there is no statement")
    return statements[0]


def _check(tree: exp.Expr, dialect: str) -> None:
    if not isinstance(tree, _ROOTS):
        raise _refused("only SELECT (or WITH ... SELECT, VALUES, EXPLAIN) is allowed")
    for node in tree.walk():
        if isinstance(node, _FORBIDDEN_NODES):
            raise _refused(f"{_name_of(node)} is not allowed in a read-only query")
        if isinstance(node, exp.Func):
            _check_function(node)
    ctes = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    for table in tree.find_all(exp.Table):
        name = table.name.lower()
        if not name:  # a table-valued function: checked as a function above
            continue
        if table.db.lower() not in _SCHEMAS.get(dialect, frozenset({""})) or table.catalog:
            raise _refused(f"{table.sql()} is outside sessionstore's tables")
        if name not in DOCUMENTED_TABLES and name not in ctes:
            raise _refused(
                f"{table.name!r} is not a sessionstore table; `sessionstore schema` lists them"
            )


def _check_function(node: exp.Func) -> None:
    if isinstance(node, exp.Anonymous):
        name = node.name.lower()
        if name not in _ALLOWED_UNMODELLED:
            raise _refused(
                f"function {name}() is not allowed (functions that reach outside the query, "
                "sleep, lock or make huge values are refused; docs/SECURITY.md lists the rules)"
            )
    elif isinstance(node, _FORBIDDEN_FUNCTIONS):
        name = node.sql_name().lower()
        raise _refused(f"function {name}() is not allowed (it makes values of any size)")


def _name_of(node: exp.Expr) -> str:
    if isinstance(node, exp.Into):
        return "SELECT INTO"
    if isinstance(node, exp.Lock):
        return "FOR UPDATE/SHARE"
    if isinstance(node, exp.Command):
        return str(node.this).upper()
    return type(node).__name__.upper()

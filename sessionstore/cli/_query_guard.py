"""What `sessionstore query` agrees to run: one SELECT over the documented tables.

The statement is parsed with a real SQL parser (sqlglot) in the database's dialect, and
what runs is the parser's own re-printing of the tree it checked, never the text as typed:
a comment or quote the parser reads one way and the database another (the nested block
comment trick) cannot smuggle a second statement past the check. Allowed: SELECT, set
operations, VALUES and CTEs over the documented tables; functions that only compute.
Refused: any write or DDL, COPY, SELECT INTO, row locks, other schemas and catalogs, casts
to the catalogs' lookup types (regclass, regproc, ...), schema-qualified functions, and
functions with effects outside the query (files, processes, other sessions, locks, sleeps,
settings) or that make huge values (format/printf widths included).

Every table reference is resolved in its own scope, as the database resolves it: a CTE
name stands for the CTE only in its WITH's body, in the later CTEs of that WITH, and in
its own body when the WITH is RECURSIVE; anywhere else the same name is the real table
(`(WITH pg_authid AS (...) ...) , pg_authid` reads the catalog), so it must be one of ours.
Names are compared after folding them the way the dialect does (PostgreSQL lower-cases
unquoted names, SQLite ignores case), and a table or CTE name must be plain ASCII, so the
parser and the database cannot disagree about which name is which. Anything the walk does
not recognise is refused. The database adds its own guards below this one: a read-only
transaction, a timeout, bounds on the result, and (PostgreSQL) an optional
least-privileged role.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Final

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.optimizer.normalize_identifiers import normalize_identifiers

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
# PRAGMAs that only read: those that name a table take one of ours, the rest take nothing
# (`PRAGMA page_size(1024)` sets the page size, it does not read it).
_TABLE_PRAGMAS: Final = frozenset({"table_info", "table_xinfo", "index_list", "foreign_key_list"})
_INDEX_PRAGMAS: Final = frozenset({"index_info", "index_xinfo"})
_VALUE_PRAGMAS: Final = frozenset(
    {
        "table_list",
        "user_version",
        "page_count",
        "page_size",
        "journal_mode",
        "encoding",
        "compile_options",
    }
)
_PRAGMA: Final = re.compile(r"^\s*pragma\b", re.I)
_READ_PRAGMA: Final = re.compile(
    r"^\s*pragma\s+(\w+)\s*(?:\(\s*(?P<q>[\"'`]?)(\w+)(?P=q)\s*\))?\s*;?\s*$", re.I
)
_EXPLAIN: Final = re.compile(r"^\s*explain(\s+query\s+plan)?\s+", re.I)
# A table, schema or CTE name the guard accepts: what both databases and the parser fold alike.
_PLAIN_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Types whose casts look things up in the catalogs: 'pg_authid'::regclass, 10::regrole.
_CATALOG_TYPE: Final = re.compile(r"reg[a-z]*\Z", re.I)
# A conversion of format()/printf(); a width or precision of up to two digits is fine.
_CONVERSION: Final = re.compile(r"%(?:\d+\$)?[-+ 0#,!']*(\*|\d*)(?:\.(\*|\d*))?")
_MAX_WIDTH_DIGITS: Final = 2


def _refused(reason: str) -> QueryRejectedError:
    return QueryRejectedError(f"refused: {reason}")


def vetted(sql: str, dialect: str) -> str:
    """The statement to run for `sql` on `dialect` ("sqlite", "postgresql"), or
    QueryRejectedError("refused: ...") saying what is not allowed."""
    if _PRAGMA.match(sql):
        return _vetted_pragma(sql, dialect)
    explain = _EXPLAIN.match(sql)
    prefix, body = (explain.group(0).strip() + " ", sql[explain.end() :]) if explain else ("", sql)
    read = _DIALECTS.get(dialect, dialect)
    try:
        tree = _one_statement(body, read)
        _check(tree, dialect)
        return prefix + tree.sql(dialect=read, comments=False)
    except RecursionError:  # nesting deeper than the parser's stack: refused, not a traceback
        raise _refused("it is nested too deeply to check") from None


# Where the outermost SELECT's list ends (at depth 0).
_LIST_ENDS: Final = frozenset(
    {
        sqlglot.TokenType.FROM,
        sqlglot.TokenType.WHERE,
        sqlglot.TokenType.GROUP_BY,
        sqlglot.TokenType.HAVING,
        sqlglot.TokenType.ORDER_BY,
        sqlglot.TokenType.LIMIT,
        sqlglot.TokenType.OFFSET,
        sqlglot.TokenType.UNION,
        sqlglot.TokenType.INTERSECT,
        sqlglot.TokenType.EXCEPT,
        sqlglot.TokenType.WINDOW,
        sqlglot.TokenType.SEMICOLON,
    }
)


def written_names(sql: str, dialect: str, names: list[str]) -> list[str]:
    """The result's column names as the user's own statement would have them.

    What runs is the parser's re-printing, and SQLite names an unaliased expression by its
    text: `count(*)` would come back as `COUNT(*)`, `a+b` as `a + b`. Those columns take the
    text as written; aliases, columns and stars keep the names the database gave (the same
    for both texts). PostgreSQL names expressions by their function (`count`), alike for
    both. When the list cannot be matched up, the names are returned unchanged."""
    if dialect != "sqlite" or _PRAGMA.match(sql) or _EXPLAIN.match(sql):
        return names
    try:
        tree = _one_statement(sql, "sqlite")
        spans = _projection_texts(sql, "sqlite")
    except (QueryRejectedError, ParseError, TokenError, RecursionError):
        return names
    if not isinstance(tree, exp.Select) or spans is None:
        return names
    projections = tree.expressions
    if len(spans) != len(projections) or len(projections) != len(names):
        return names
    if any(isinstance(node, exp.Star) or node.is_star for node in projections):
        return names
    return [
        name if isinstance(node, exp.Alias | exp.Column) else text
        for name, node, text in zip(names, projections, spans, strict=True)
    ]


def _projection_texts(sql: str, dialect: str) -> list[str] | None:
    """The text of each item of the outermost SELECT's list, as typed (None: not found)."""
    tokens = sqlglot.tokenize(sql, read=dialect)
    depth = 0
    start = None
    for index, token in enumerate(tokens):
        if token.token_type == sqlglot.TokenType.L_PAREN:
            depth += 1
        elif token.token_type == sqlglot.TokenType.R_PAREN:
            depth -= 1
        elif depth == 0 and token.token_type == sqlglot.TokenType.SELECT:
            start = index + 1
            break
    if start is None:
        return None
    while start < len(tokens) and tokens[start].token_type in (
        sqlglot.TokenType.DISTINCT,
        sqlglot.TokenType.ALL,
    ):
        start += 1
    items: list[list[Any]] = [[]]
    for token in tokens[start:]:
        if token.token_type == sqlglot.TokenType.L_PAREN:
            depth += 1
        elif token.token_type == sqlglot.TokenType.R_PAREN:
            depth -= 1
        elif depth == 0 and token.token_type in _LIST_ENDS:
            break
        elif depth == 0 and token.token_type == sqlglot.TokenType.COMMA:
            items.append([])
            continue
        items[-1].append(token)
    if any(not item for item in items):
        return None
    return [sql[item[0].start : item[-1].end + 1].strip() for item in items]


def _vetted_pragma(sql: str, dialect: str) -> str:
    """A read-only PRAGMA, re-written from what was checked (its argument quoted)."""
    if dialect != "sqlite":
        raise _refused("PRAGMA is SQLite's")
    match = _READ_PRAGMA.match(sql)
    name = match.group(1).lower() if match else ""
    argument = match.group(3) if match else None
    allowed = (
        (name in _TABLE_PRAGMAS and argument is not None and argument.lower() in DOCUMENTED_TABLES)
        or (name in _INDEX_PRAGMAS and argument is not None)
        or (name in _VALUE_PRAGMAS and argument is None)
    )
    if match is None or not allowed:
        raise _refused(
            "only read-only PRAGMAs are allowed: table_info, table_xinfo, index_list and "
            "foreign_key_list of a sessionstore table, index_info(index), or one of "
            f"{', '.join(sorted(_VALUE_PRAGMAS))} without a value"
        )
    return f'PRAGMA {name}("{argument}")' if argument is not None else f"PRAGMA {name}"


def _one_statement(sql: str, dialect: str) -> exp.Expr:
    # The parser's own warnings ("falling back to parsing as a Command") are not output:
    # the refusal that follows says what is wrong, in one line.
    logging.getLogger("sqlglot").setLevel(logging.ERROR)
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
        elif isinstance(node, exp.DataType):
            _check_type(node)
        elif isinstance(node, exp.Dot) and isinstance(node.expression, exp.Func):
            raise _refused(f"{node.sql()} names a schema; call functions without one")
        elif isinstance(node, exp.Column):
            _check_qualifier(node, node.args.get("db"), node.args.get("catalog"), dialect)
    # Names are resolved as the database folds them: on a copy, so what runs keeps its case.
    _resolve(normalize_identifiers(tree.copy(), dialect=_DIALECTS.get(dialect, dialect)), dialect)


def _resolve(tree: exp.Expr, dialect: str) -> None:
    """Walk every node once, carrying the CTE names visible there; each table reference
    must be a visible CTE or a documented table (see the module docstring for the rule)."""
    defined = {_cte_name(cte) for cte in tree.find_all(exp.CTE)}
    pending: list[tuple[exp.Expr, frozenset[str]]] = [(tree, frozenset())]
    while pending:
        node, visible = pending.pop()
        if isinstance(node, exp.With | exp.CTE):
            raise _refused("a WITH clause where the guard cannot tell what it covers")
        if isinstance(node, exp.Table):
            _check_table(node, visible, defined, dialect)
        withs = [value for value in node.args.values() if isinstance(value, exp.With)]
        if len(withs) > 1:
            raise _refused("two WITH clauses on one query")
        body = _enter_with(withs[0], visible, pending) if withs else visible
        # Any other WITH or CTE below this node is queued as a child and refused above.
        pending.extend(
            (child, body)
            for child in node.iter_expressions()
            if not any(child is with_ for with_ in withs)
        )


def _enter_with(
    with_: exp.With, outer: frozenset[str], pending: list[tuple[exp.Expr, frozenset[str]]]
) -> frozenset[str]:
    """Queue the WITH's parts with what each sees; return what its body sees."""
    recursive = bool(with_.args.get("recursive"))
    seen = outer
    for part in with_.iter_expressions():
        if not isinstance(part, exp.CTE):  # SEARCH / CYCLE clauses: columns of the CTEs
            pending.append((part, seen))
            continue
        name = _cte_name(part)
        own = seen | {name} if recursive else seen
        pending.extend((child, own) for child in part.iter_expressions())
        seen = seen | {name}
    return seen


def _cte_name(cte: exp.CTE) -> str:
    name = cte.alias
    if not _PLAIN_NAME.match(name):
        raise _refused(f"CTE name {name!r}: use letters, digits and _ only")
    return name


def _check_table(
    table: exp.Table, visible: frozenset[str], defined: set[str], dialect: str
) -> None:
    """One table reference: a CTE visible here, or a documented table of our schema."""
    if not isinstance(table.this, exp.Identifier):
        if isinstance(table.this, exp.Func):  # a table-valued function: checked as a function
            return
        raise _refused(f"{table.sql()} is not a table the guard can resolve")
    name = table.name
    if not _PLAIN_NAME.match(name):
        raise _refused(f"table name {name!r}: use letters, digits and _ only")
    _check_qualifier(table, table.args.get("db"), table.args.get("catalog"), dialect)
    if not table.db and name in visible:
        return
    if name in DOCUMENTED_TABLES:
        return
    if name in defined:
        raise _refused(
            f"{name!r} here names a table, not the CTE of that name (a CTE is visible only in "
            "its WITH's query, in the CTEs after it and, under WITH RECURSIVE, in itself), "
            "and it is not a sessionstore table"
        )
    raise _refused(f"{name!r} is not a sessionstore table; `sessionstore schema` lists them")


def _check_qualifier(
    node: exp.Expr, db: exp.Expr | None, catalog: exp.Expr | None, dialect: str
) -> None:
    """A schema qualifier must be ours (SQLite `main`, PostgreSQL `public`); no catalog."""
    schema = db.name if isinstance(db, exp.Identifier) else ("" if db is None else db.sql())
    if catalog is not None or schema.lower() not in _SCHEMAS.get(dialect, frozenset({""})):
        raise _refused(f"{node.sql()} is outside sessionstore's tables")


def _check_type(node: exp.DataType) -> None:
    """No casts to catalog lookup types (regclass, regproc, regrole, ...) or unknown types."""
    kind = node.this
    name = kind.value if isinstance(kind, exp.DataType.Type) else str(kind)
    if kind == exp.DataType.Type.USERDEFINED or _CATALOG_TYPE.match(name):
        raise _refused(f"type {node.sql()} is not allowed (it reads the catalogs)")


def _check_function(node: exp.Func) -> None:
    if isinstance(node, exp.Anonymous):
        name = node.name.lower()
        if name not in _ALLOWED_UNMODELLED:
            raise _refused(
                f"function {name}() is not allowed (functions that reach outside the query, "
                "sleep, lock or make huge values are refused; docs/SECURITY.md lists the rules)"
            )
        if name in ("printf", "format"):
            _check_format(name, node.expressions[0] if node.expressions else None)
    elif isinstance(node, exp.Format):
        _check_format("format", node.this)
    elif isinstance(node, _FORBIDDEN_FUNCTIONS):
        name = node.sql_name().lower()
        raise _refused(f"function {name}() is not allowed (it makes values of any size)")


def _check_format(name: str, template: exp.Expr | None) -> None:
    """format()/printf() pad to any width (`%900000000s`): a literal template, small widths."""
    if not (isinstance(template, exp.Literal) and template.is_string):
        raise _refused(f"{name}() takes a literal template here (its widths are checked)")
    for width, precision in _CONVERSION.findall(template.this.replace("%%", "")):
        for number in (width, precision):
            if number == "*" or len(number) > _MAX_WIDTH_DIGITS:
                raise _refused(
                    f"{name}() width or precision {number!r} is not allowed "
                    f"(at most {_MAX_WIDTH_DIGITS} digits, no *: it makes values of any size)"
                )


def _name_of(node: exp.Expr) -> str:
    if isinstance(node, exp.Into):
        return "SELECT INTO"
    if isinstance(node, exp.Lock):
        return "FOR UPDATE/SHARE"
    if isinstance(node, exp.Command):
        return str(node.this).upper()
    return type(node).__name__.upper()

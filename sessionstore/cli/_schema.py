"""`sessionstore schema`: the documented tables, their columns and row counts.

What `sessionstore query` can read, without leaving the command line: the tables of
docs/SCHEMA.md as this release defines them, counted in the database at hand.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import sqlalchemy as sa
import typer
from rich.table import Table
from sqlalchemy.engine import Connection

from .._schema import metadata
from ._common import ConfigOption, UrlOption, console, emit_json, open_store
from ._text import shown


def _counts(conn: Connection) -> dict[str, int]:
    return {
        name: int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())
        for name, table in metadata.tables.items()
    }


def schema(
    table: Annotated[str | None, typer.Argument(help="One table's columns.")] = None,
    url: UrlOption = None,
    config: ConfigOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """The tables `sessionstore query` reads (docs/SCHEMA.md), with columns and row counts."""
    if table is not None and table not in metadata.tables:
        raise typer.BadParameter(
            f"no table {table!r}; the tables are {', '.join(sorted(metadata.tables))}",
            param_hint="TABLE",
        )

    async def go() -> dict[str, int]:
        async with open_store(url, config, read_only=True) as store:
            return await store.read_snapshot(_counts)

    counts = asyncio.run(go())
    chosen = [metadata.tables[table]] if table else list(metadata.sorted_tables)
    if as_json:
        emit_json(
            [
                {
                    "table": t.name,
                    "rows": counts[t.name],
                    "columns": [
                        {"name": c.name, "type": str(c.type), "nullable": bool(c.nullable)}
                        for c in t.columns
                    ],
                }
                for t in chosen
            ]
        )
        return
    if table is None:
        overview = Table(title="Tables (docs/SCHEMA.md)")
        for column in ("table", "rows", "columns"):
            overview.add_column(column, justify="right" if column == "rows" else "left")
        for t in chosen:
            names = ", ".join(c.name for c in t.columns)
            overview.add_row(shown(t.name), shown(f"{counts[t.name]:,}"), shown(names))
        console.print(overview)
        return
    details = Table(title=f"{table} ({counts[table]:,} rows)")
    for column in ("column", "type", "nullable"):
        details.add_column(column)
    for c in chosen[0].columns:
        details.add_row(shown(c.name), shown(c.type), shown(bool(c.nullable)))
    console.print(details)

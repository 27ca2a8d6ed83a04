"""Questions about agent history, answered with plain SQL over the documented schema.

Every stored item is a row of `messages` with typed columns (role, item_type, tool_name,
call_id, tokens, created_at) next to its JSON payload; every compaction is a row of
`compactions` (docs/SCHEMA.md). So an analyst needs no API: `store.engine` is an ordinary
SQLAlchemy AsyncEngine, and each question below is one SELECT that runs unchanged on SQLite
and PostgreSQL.

    python examples/sql_queries.py                                  # ./sessionstore.db
    python examples/sql_queries.py postgresql://user@host/db        # or $SESSIONSTORE_URL

The first run stores three short agent sessions (two of them compacted) to ask about;
later runs ask the same questions of the same history. Fully offline.
"""

from __future__ import annotations

import asyncio
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa

from sessionstore import SessionStore, decode_payload, text_of
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy

MENTION = "Postgres 16"

TOOLS_CALLED_MOST = """
SELECT tool_name, count(*) AS calls
FROM messages
WHERE kind = 'item' AND item_type = 'function_call'
GROUP BY tool_name
ORDER BY calls DESC, tool_name
"""

TOKENS_SAVED_PER_SESSION = """
SELECT session_id, count(*) AS rounds, sum(tokens_before - tokens_after) AS saved
FROM compactions
GROUP BY session_id
ORDER BY saved DESC
"""

COMPACTED_SINCE = sa.text(
    "SELECT DISTINCT session_id FROM compactions WHERE created_at >= :since ORDER BY session_id"
).bindparams(sa.bindparam("since", type_=sa.DateTime(timezone=True)))

# kind = 'item' is what was appended; compaction's copies (kind = 'carry') would repeat it.
# The answer is the first assistant message after the user's.
USER_MENTIONED = """
SELECT u.session_id, u.seq, u.payload,
       (SELECT a.payload FROM messages a
        WHERE a.session_id = u.session_id AND a.seq > u.seq
          AND a.kind = 'item' AND a.role = 'assistant'
        ORDER BY a.seq LIMIT 1) AS answer
FROM messages u
WHERE u.kind = 'item' AND u.role = 'user'
  AND lower(CAST(u.payload AS TEXT)) LIKE lower(:pattern)
ORDER BY u.session_id, u.seq
"""


async def ask(store: SessionStore) -> None:
    async with store.engine.connect() as conn:
        print("Which tools were called most?")
        for tool, calls in await conn.execute(sa.text(TOOLS_CALLED_MOST)):
            print(f"  {tool:<12} {calls}")

        print("How many tokens did compaction save per session?")
        for session_id, rounds, saved in await conn.execute(sa.text(TOKENS_SAVED_PER_SESSION)):
            print(f"  {session_id:<14} {saved} tokens saved in {rounds} compaction(s)")

        print("Which sessions compacted in the last day?")
        since = datetime.now(UTC) - timedelta(days=1)
        compacted = (await conn.execute(COMPACTED_SINCE, {"since": since})).scalars().all()
        print(f"  {', '.join(compacted) or 'none'}")

        print(f"Where did a user mention {MENTION!r}?")
        found = await conn.execute(sa.text(USER_MENTIONED), {"pattern": f"%{MENTION}%"})
        for session_id, seq, payload, answer in found:
            print(f"  {session_id} seq {seq}: {text_of(decode_payload(payload))}")
            if answer is not None:
                print(f"    answered: {text_of(decode_payload(answer))}")


# ------------------------------------------------------------ the history to ask about


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def _assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "output_text", "text": text}]}


def _tool(call_id: str, name: str, arguments: str, output: str) -> list[dict[str, Any]]:
    call = {"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments}
    return [call, {"type": "function_call_output", "call_id": call_id, "output": output}]


def _billing_turn(n: int) -> list[dict[str, Any]]:
    log = "\n".join(f"billing/{n}/module_{k}.py: ok" for k in range(40))
    return [
        _user(f"Step {n}: check billing module {n} against the new schema."),
        *_tool(f"read_{n}", "read_file", f'{{"path": "billing/m{n}.py"}}', log),
        *_tool(f"test_{n}", "run_tests", f'{{"target": "billing/{n}"}}', f"{20 + n} passed"),
        _assistant(f"Module {n} is compatible; {20 + n} tests pass."),
    ]


# Each session is a list of turns; None marks where it was compacted.
SESSIONS: dict[str, list[list[dict[str, Any]] | None]] = {
    # A short trip-planning chat: two tool calls, never compacted.
    "alice-trip": [
        [
            _user("What's the weather in Paris and Lyon next week?"),
            *_tool("w1", "get_weather", '{"city": "Paris"}', "18C, rain on Tuesday"),
            *_tool("w2", "get_weather", '{"city": "Lyon"}', "22C, sunny"),
            _assistant("Paris: 18C with rain on Tuesday. Lyon: 22C and sunny."),
        ]
    ],
    # A migration: the user states the goal once, then many tool-heavy steps; two rounds.
    "bob-billing": [
        [
            _user(f"We must migrate billing to {MENTION} by Friday, without downtime."),
            _assistant(f"Understood: billing moves to {MENTION} by Friday, zero downtime."),
        ],
        *(_billing_turn(n) for n in range(1, 4)),
        None,
        *(_billing_turn(n) for n in range(4, 7)),
        None,
    ],
    # A deploy investigation: one round.
    "carol-deploy": [
        [
            _user("The deploy of checkout failed; find out why."),
            *_tool("l1", "get_logs", '{"service": "checkout"}', "ERROR: migration 42 timed out"),
            *_tool("r1", "read_file", '{"path": "migrations/42.sql"}', "ALTER TABLE ... " * 60),
            _assistant("Migration 42 rewrites a large table; it timed out after 300 s."),
        ],
        [
            _user("Can we split it?"),
            *_tool("r2", "read_file", '{"path": "migrations/43.sql"}', "CREATE INDEX ... " * 60),
            *_tool("l2", "get_logs", '{"service": "db"}', "lock wait on orders " * 30),
            *_tool("t1", "run_tests", '{"target": "migrations"}', "12 passed"),
            _assistant("Yes: add the column first, backfill in batches, then the index."),
        ],
        None,
    ],
}


async def seed(store: SessionStore) -> None:
    """Store the sessions once, compacting where the script says (None)."""
    if await store.session_info("alice-trip") is not None:
        return
    policy = CompactionPolicy(keep_recent_turns=1, keep_tool_io_pairs=1)
    manager = CompactionManager(CompactionConfig(store=store, policy=policy))
    for session_id, turns in SESSIONS.items():
        for turn in turns:
            if turn is None:
                await manager.compact(session_id, trigger="manual", note="example")
            else:
                await manager.append(session_id, turn)


async def main() -> None:
    url = sys.argv[1] if len(sys.argv) > 1 else None  # None: $SESSIONSTORE_URL or ./sessionstore.db
    async with SessionStore(url, create_tables=True) as store:
        await seed(store)
        await ask(store)


if __name__ == "__main__":
    asyncio.run(main())

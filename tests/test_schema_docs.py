"""docs/SCHEMA.md's example queries run as printed on PostgreSQL, against a session with a
branch and recorded model calls, and answer what their captions ask."""

from __future__ import annotations

import re
from pathlib import Path

import sqlalchemy as sa

from sessionstore import CallUsage, SessionStore
from tests.support.histories import call, output, user

SCHEMA_MD = Path(__file__).resolve().parents[1] / "docs" / "SCHEMA.md"


def _examples() -> list[str]:
    text = SCHEMA_MD.read_text(encoding="utf-8").split("## Example queries", 1)[1]
    return re.findall(r"```sql\n(.*?)```", text, re.S)


async def test_the_example_queries_answer_their_questions(pg_url: str) -> None:
    from tests.conftest import _empty_tables

    await _empty_tables(pg_url)
    async with SessionStore(pg_url) as store:
        await store.append(
            "user-42", [user("fix the tests"), call("c1", "run_tests"), output("c1", "3 failed")]
        )
        for _ in range(17):
            await store.record_model_call(
                "user-42", await store.load_context("user-42"), model="gpt-4o"
            )
        await store.record_usage("user-42", [CallUsage(100, 10, 20, 0)], calls=[(1, "gpt-4o")])
        await store.fork("user-42", "user-42@retry")
        await store.append("user-42@retry", [call("c2", "run_tests"), output("c2", "all passed")])
        answers = []
        async with store.engine.connect() as conn:
            for sql in _examples():
                answers.append((await conn.execute(sa.text(sql))).all())
    assert len(answers) >= 7
    *_, cost, solved, call_17, seen = answers
    assert [(row.user_session, row.calls) for row in cost] == [("user-42", 17)]
    assert [(row.branch, row.fork_seq, row.passed_at) for row in solved] == [
        ("user-42@retry", 3, 5)
    ]
    assert [(row.call, row.context_to_seq) for row in call_17] == [(17, 3)]
    assert [row.seq for row in seen] == [1, 2, 3]

"""docs/SCHEMA.md's example queries run as printed on PostgreSQL, against a session with a
branch and recorded model calls, and answer what their captions ask; its views agree with the
store's own calls on both backends."""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa

from sessionstore import CallUsage, SessionStore
from tests.support.histories import call, output, user
from tests.support.paths import REPO_ROOT

SCHEMA_MD = REPO_ROOT / "docs" / "SCHEMA.md"


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


async def test_the_session_usage_view_sums_what_store_usage_sums(db_url: str) -> None:
    async with SessionStore(db_url) as store:
        await store.append("p", [user("hi")])
        await store.fork("p", "p@b")
        for session_id, usage in (("p", CallUsage(100, 10, 20, 5)), ("p@b", CallUsage(7, 0, 3, 0))):
            call_id = await store.record_model_call(session_id, [user("hi")], model="gpt-4o")
            await store.record_usage(session_id, [usage], calls=[(call_id, "gpt-4o")])
        async with store.engine.connect() as conn:
            view = (await conn.execute(sa.text("SELECT * FROM session_usage ORDER BY 1"))).all()
        totals = await store.usage(by="session")
    assert [(row.session_id, row.parent_session_id, row.calls) for row in view] == [
        ("p", None, 1),
        ("p@b", "p", 1),
    ]
    by_session = {row["session"]: row for row in totals}
    for row in view:
        assert (row.input_tokens, row.output_tokens) == (
            by_session[row.session_id]["input_tokens"],
            by_session[row.session_id]["output_tokens"],
        )
        assert row.cost_usd == pytest.approx(by_session[row.session_id]["cost_usd"])

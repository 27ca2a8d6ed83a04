"""Every session id the store accepts is one every archive sink can store (issue #34).

Hostile ids go through a real compaction on both backends with the filesystem sink and
the S3 sink (a real moto server) configured: the compaction commits, each sink holds a
copy that reads back under the id, and nothing is written outside the sink's root. An id
no backend can store is refused before anything is written.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import sqlalchemy as sa

from sessionstore import InvalidSessionIdError, SessionStore, SessionStoreError
from sessionstore._schema import compactions, messages, sessions
from sessionstore.archive import ArchiveSink
from sessionstore.archive._filesystem import EVENTS_FILE, FilesystemSink
from sessionstore.archive._s3 import S3Sink
from sessionstore.archive._sinks import safe_name, session_id_of
from sessionstore.compaction import CompactionConfig, CompactionManager, CompactionPolicy
from tests.support.archives import s3_client
from tests.support.histories import coding_session

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

HOSTILE_IDS = [
    "",
    ".",
    "..",
    "/",
    "a/../../b",
    "../../../../tmp/escape",
    "%",
    "%2F",
    "1" * 1024,
    "sessão-😀-ü-日本",
    "-rf",
    "--json",
    " spaced id ",
    "tab\tnewline\n",
]
PREFIX = "archive/prod"


def manager(store: SessionStore, root: Path, s3: S3Client, bucket: str) -> CompactionManager:
    sinks: list[ArchiveSink] = [FilesystemSink(root), S3Sink(bucket, prefix=PREFIX, client=s3)]
    policy = CompactionPolicy(keep_recent_turns=2)
    return CompactionManager(
        CompactionConfig(max_context_tokens=100_000, store=store, policy=policy, sinks=sinks)
    )


def files_under(path: Path) -> list[Path]:
    return [Path(folder) / name for folder, _, names in os.walk(path) for name in names]


def jsonl(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(line) for line in data.splitlines()]


async def test_every_accepted_id_is_compacted_and_copied_to_every_sink(
    db_url: str, tmp_path: Path, aws_endpoint: str
) -> None:
    sandbox = tmp_path / "sandbox"
    root = sandbox / "root"
    s3 = s3_client(aws_endpoint)
    bucket = f"hostile-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    replaced: dict[str, int] = {}
    async with SessionStore(db_url) as store:
        compacting = manager(store, root, s3, bucket)
        for session_id in HOSTILE_IDS:
            await compacting.append(session_id, coding_session(10))
            outcome = await compacting.compact(session_id)
            assert outcome.result is not None and outcome.plan is not None, session_id
            replaced[session_id] = len(outcome.plan.replaced_rows)
        async with store.engine.connect() as conn:
            committed = set(
                (await conn.execute(sa.select(compactions.c.session_id))).scalars().all()
            )
    assert committed >= set(HOSTILE_IDS)

    # Nothing outside the root: beside it only what the test made (and the SQLite file).
    assert os.listdir(sandbox) == ["root"]
    assert set(os.listdir(tmp_path)) <= {
        "sandbox",
        "sessions.db",
        "sessions.db-wal",
        "sessions.db-shm",
    }
    names = {safe_name(session_id) for session_id in HOSTILE_IDS}
    assert sorted(os.listdir(root)) == sorted(names)  # one folder each, none shared
    for path in files_under(root):
        assert path.resolve().parent.parent == root.resolve(), path
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, MaxKeys=1000)["Contents"]]
    assert len(keys) == 3 * len(HOSTILE_IDS)  # transcript, summary, events each
    for key in keys:
        prefix, name, filename = key.rsplit("/", 2)
        assert prefix == PREFIX and name in names and "/" not in filename, key

    for session_id in HOSTILE_IDS:
        name = safe_name(session_id)
        assert session_id_of(name) in {session_id, None}  # None: hashed, the events name it
        if len(session_id) < 100:
            assert session_id_of(name) == session_id
        folder = root / name
        on_disk = jsonl((folder / "transcript-pre-compact-001.jsonl").read_bytes())
        in_s3 = jsonl(
            s3.get_object(Bucket=bucket, Key=f"{PREFIX}/{name}/transcript-pre-compact-001.jsonl")[
                "Body"
            ].read()
        )
        assert on_disk == in_s3 and len(on_disk) == replaced[session_id], session_id
        assert json.loads((folder / "summary-001.json").read_bytes())["version"] == 1
        logged = jsonl((folder / EVENTS_FILE).read_bytes())
        logged_s3 = jsonl(
            s3.get_object(Bucket=bucket, Key=f"{PREFIX}/{name}/events-001.jsonl")["Body"].read()
        )
        assert {event["session_id"] for event in [*logged, *logged_s3]} == {session_id}


@pytest.mark.parametrize("session_id", ["a\x00b", "\x00", "half \ud800 pair"])
async def test_an_id_no_backend_can_store_is_refused_before_anything_is_written(
    db_url: str, tmp_path: Path, aws_endpoint: str, session_id: str
) -> None:
    root = tmp_path / "root"
    s3 = s3_client(aws_endpoint)
    bucket = f"refused-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    async with SessionStore(db_url) as store:
        compacting = manager(store, root, s3, bucket)
        attempts: list[Callable[[], Awaitable[object]]] = [
            lambda: compacting.append(session_id, coding_session(10)),
            lambda: compacting.compact(session_id),
            lambda: store.append(session_id, coding_session(2)),
        ]
        for attempt in attempts:
            with pytest.raises(InvalidSessionIdError) as info:
                await attempt()
            assert isinstance(info.value, SessionStoreError) and isinstance(info.value, ValueError)
            assert "session_id contains" in str(info.value)
        async with store.engine.connect() as conn:
            for table in (sessions, messages, compactions):
                assert (
                    await conn.execute(sa.select(sa.func.count()).select_from(table))
                ).scalar_one() == 0
    assert not root.exists()
    assert "Contents" not in s3.list_objects_v2(Bucket=bucket)

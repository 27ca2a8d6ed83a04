"""Archival sinks: the filesystem layout, modes and path safety, redaction, and S3 on moto.

S3 and KMS run against a real moto server on 127.0.0.1 spoken to by real boto3 clients.
"""

from __future__ import annotations

import copy
import json
import os
import socket
import stat
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3
import pytest

from sessionstore._errors import ArchiveSinkError, SessionStoreError
from sessionstore._events import Event
from sessionstore._redaction import Redactor
from sessionstore.archive import ArchiveDelivery, ArchiveSink
from sessionstore.archive._filesystem import FilesystemSink
from sessionstore.archive._s3 import S3Sink
from sessionstore.archive._sinks import safe_name
from tests.support.archives import CLIENT_OPTIONS, s3_client

if TYPE_CHECKING:
    from mypy_boto3_kms import KMSClient
    from mypy_boto3_s3 import S3Client

API_KEY = "sk-abc123DEF456ghi789JKL"
PASSWORD = "hunter2xyz"
SECRETS = (API_KEY.encode(), PASSWORD.encode())
TRANSCRIPT = [
    {"seq": 1, "item": {"role": "user", "content": f"use api_key={API_KEY} please"}},
    {"seq": 2, "item": {"role": "assistant", "content": f"password: {PASSWORD} noted"}},
    {"seq": 3, "item": {"role": "user", "content": "merci, sessão 😀"}},
]
REDACTED_TRANSCRIPT = [
    {"seq": 1, "item": {"role": "user", "content": "use api_key=<REDACTED> please"}},
    {"seq": 2, "item": {"role": "assistant", "content": "password: <REDACTED> noted"}},
    {"seq": 3, "item": {"role": "user", "content": "merci, sessão 😀"}},
]
SUMMARY = {"version": 1, "text": f"password: {PASSWORD}", "strategy": "extractive", "tokens": 9}
REDACTED_SUMMARY = {**SUMMARY, "text": "password: <REDACTED>"}


def trigger_event(session_id: str) -> Event:
    return Event("compact.trigger_decision", session_id, fields={"triggered": True, "why": API_KEY})


def delivery(step: int = 1, session_id: str = "sess-1", **changes: Any) -> ArchiveDelivery:
    values: dict[str, Any] = {
        "transcript": TRANSCRIPT,
        "summary": SUMMARY,
        "events": [trigger_event(session_id)],
    }
    values.update(changes)
    return ArchiveDelivery(session_id=session_id, step=step, **values)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return tmp_path / "archive"


# --- filesystem -----------------------------------------------------------------------------


def test_fs_layout_contents_and_archival_events(root: Path) -> None:
    sink: ArchiveSink = FilesystemSink(root)
    produced = sink.deliver(delivery())

    directory = root / "sess-1"
    assert sorted(os.listdir(directory)) == [
        "events.jsonl",
        "summary-001.json",
        "transcript-pre-compact-001.jsonl",
    ]
    transcript = directory / "transcript-pre-compact-001.jsonl"
    summary = directory / "summary-001.json"
    assert lines(transcript) == REDACTED_TRANSCRIPT
    assert json.loads(summary.read_text("utf-8")) == REDACTED_SUMMARY
    assert "sessão 😀" in transcript.read_text("utf-8")  # readable UTF-8, not \u escapes

    assert [(e.event, e.session_id) for e in produced] == [("compact.archival", "sess-1")] * 2
    assert [dict(e.fields) for e in produced] == [
        {
            "step": 1,
            "storage_adapter": "fs",
            "artifact": "transcript",
            "file_path": str(transcript),
            "item_count": 3,
            "bytes": transcript.stat().st_size,
        },
        {
            "step": 1,
            "storage_adapter": "fs",
            "artifact": "summary",
            "file_path": str(summary),
            "item_count": 1,
            "bytes": summary.stat().st_size,
        },
    ]


def test_fs_events_log_accumulates_across_steps(root: Path) -> None:
    sink = FilesystemSink(root)
    sink.deliver(delivery(1))
    sink.deliver(delivery(2, summary=None))

    directory = root / "sess-1"
    assert sorted(os.listdir(directory)) == [
        "events.jsonl",
        "summary-001.json",
        "transcript-pre-compact-001.jsonl",
        "transcript-pre-compact-002.jsonl",
    ]
    logged = lines(directory / "events.jsonl")
    assert [(e["event"], e.get("step"), e.get("artifact")) for e in logged] == [
        ("compact.trigger_decision", None, None),
        ("compact.archival", 1, "transcript"),
        ("compact.archival", 1, "summary"),
        ("compact.trigger_decision", None, None),
        ("compact.archival", 2, "transcript"),
    ]
    assert logged[4]["file_path"] == str(directory / "transcript-pre-compact-002.jsonl")
    assert logged[0]["why"] == "<REDACTED>"


def test_fs_torn_last_log_line_does_not_swallow_the_next(root: Path) -> None:
    sink = FilesystemSink(root)
    sink.deliver(delivery(1))
    log = root / "sess-1" / "events.jsonl"
    with log.open("ab") as handle:
        handle.write(b'{"event":"torn')  # a crash mid-append
    sink.deliver(delivery(2))
    text = log.read_text("utf-8").splitlines()
    assert text[3] == '{"event":"torn'
    assert [json.loads(line)["event"] for line in text[4:]] == [
        "compact.trigger_decision",
        "compact.archival",
        "compact.archival",
    ]


def test_fs_files_are_owner_only_whatever_the_umask(root: Path) -> None:
    previous = os.umask(0)
    try:
        FilesystemSink(root).deliver(delivery())
    finally:
        os.umask(previous)
    directory = root / "sess-1"
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in directory.iterdir()}
    assert modes == {
        "events.jsonl": 0o600,
        "summary-001.json": 0o600,
        "transcript-pre-compact-001.jsonl": 0o600,
    }
    (directory / "events.jsonl").chmod(0o644)
    FilesystemSink(root).deliver(delivery(2))
    assert stat.S_IMODE((directory / "events.jsonl").stat().st_mode) == 0o600


HOSTILE_IDS = [
    "../../etc",
    "a/b",
    "..",
    ".",
    "/etc/passwd",
    "a\\..\\b",
    ".hidden",
    "sessão-😀-ü",
    "%2E%2E",
    "x" * 300,
    "😀" * 100,
    "nul\x00byte",
]


@pytest.mark.parametrize("session_id", HOSTILE_IDS)
def test_fs_session_ids_stay_inside_root(tmp_path: Path, session_id: str) -> None:
    root = tmp_path / "archive"
    sink = FilesystemSink(root)
    produced = sink.deliver(delivery(session_id=session_id))

    directory = sink.session_dir(session_id)
    assert directory.parent == root
    assert directory.name not in {".", ".."} and not directory.name.startswith(".")
    assert len(directory.name.encode()) <= 255
    assert os.listdir(tmp_path) == ["archive"]
    assert os.listdir(root) == [directory.name]
    for event in produced:
        path = Path(event.fields["file_path"])
        assert path.resolve().parent == directory.resolve() == (root / directory.name).resolve()
    logged = lines(directory / "events.jsonl")
    assert {e["session_id"] for e in logged} == {session_id}


def test_safe_names_are_distinct() -> None:
    ids = [*HOSTILE_IDS, "a%2Fb", "x" * 301, "~", "%7E", ".a", "%2Ea"]
    names = [safe_name(session_id) for session_id in ids]
    assert len(set(names)) == len(ids)
    assert safe_name("Sess_1.2-x") == "Sess_1.2-x"
    assert safe_name("../../etc") == "%2E.%2F..%2Fetc"


def test_fs_redacts_every_artifact_and_leaves_inputs_unchanged(root: Path) -> None:
    handed = delivery()
    before = copy.deepcopy((handed.transcript, handed.summary, handed.events))
    FilesystemSink(root).deliver(handed)

    assert (handed.transcript, handed.summary, handed.events) == before
    assert API_KEY in handed.transcript[0]["item"]["content"]
    files = sorted((root / "sess-1").iterdir())
    assert len(files) == 3
    for path in files:
        body = path.read_bytes()
        assert b"<REDACTED>" in body, path.name
        for secret in SECRETS:
            assert secret not in body, (path.name, secret)


def test_fs_redaction_disabled_writes_raw_and_warns_first(root: Path) -> None:
    produced = FilesystemSink(root, redactor=Redactor(enabled=False)).deliver(delivery())
    assert [(e.event, e.severity) for e in produced] == [
        ("compact.warning", "high"),
        ("compact.archival", "info"),
        ("compact.archival", "info"),
    ]
    assert produced[0].fields["warning"] == "redaction_disabled"
    directory = root / "sess-1"
    assert lines(directory / "transcript-pre-compact-001.jsonl") == TRANSCRIPT
    logged = lines(directory / "events.jsonl")
    assert [e["event"] for e in logged][1] == "compact.warning"


def test_fs_custom_redactor_is_used(root: Path) -> None:
    sink = FilesystemSink(root, redactor=Redactor(extra_patterns=[r"sessão"]))
    sink.deliver(delivery())
    assert lines(root / "sess-1" / "transcript-pre-compact-001.jsonl")[2]["item"] == {
        "role": "user",
        "content": "merci, <REDACTED> 😀",
    }


def test_fs_unserializable_input_writes_nothing(root: Path) -> None:
    with pytest.raises(TypeError):
        FilesystemSink(root).deliver(delivery(summary={"text": object()}))
    assert not root.exists()


def test_fs_unwritable_root_is_a_session_store_error(tmp_path: Path) -> None:
    root = tmp_path / "archive"
    root.write_text("not a directory")
    with pytest.raises(SessionStoreError) as info:
        FilesystemSink(root).deliver(delivery(3))
    assert isinstance(info.value, ArchiveSinkError)
    assert str(info.value).startswith(
        f"cannot write the archive of step 3 of session 'sess-1' under {root}: "
    )


def test_fs_lone_surrogate_round_trips(root: Path) -> None:
    record = {"seq": 1, "item": {"role": "user", "content": "bad \udc80 byte"}}
    FilesystemSink(root).deliver(delivery(transcript=[record]))
    assert lines(root / "sess-1" / "transcript-pre-compact-001.jsonl") == [record]


@pytest.mark.parametrize(
    ("session_id", "step", "message"),
    [("s", -1, "non-negative int"), ("s", True, "int")],
)
def test_delivery_is_validated(session_id: str, step: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ArchiveDelivery(session_id, step, TRANSCRIPT, None, [])


# --- S3, against a real moto server ---------------------------------------------------------


@pytest.fixture
def s3(aws_endpoint: str) -> S3Client:
    return s3_client(aws_endpoint)


@pytest.fixture
def kms(aws_endpoint: str) -> KMSClient:
    return boto3.client("kms", endpoint_url=aws_endpoint, **CLIENT_OPTIONS)


@pytest.fixture
def bucket(s3: S3Client) -> str:
    name = f"archive-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name


def object_keys(s3: S3Client, bucket: str) -> list[str]:
    return sorted(o["Key"] for o in s3.list_objects_v2(Bucket=bucket).get("Contents", []))


def body(s3: S3Client, bucket: str, key: str) -> bytes:
    return s3.get_object(Bucket=bucket, Key=key)["Body"].read()


def test_s3_uploads_redacted_artifacts_under_kms(s3: S3Client, kms: KMSClient, bucket: str) -> None:
    key_id = kms.create_key()["KeyMetadata"]["Arn"]
    sink: ArchiveSink = S3Sink(bucket, prefix="/prod/archive/", client=s3, kms_key_id=key_id)
    handed = delivery(2)
    before = copy.deepcopy((handed.transcript, handed.summary, handed.events))
    produced = sink.deliver(handed)

    base = "prod/archive/sess-1"
    transcript_key = f"{base}/transcript-pre-compact-002.jsonl"
    summary_key = f"{base}/summary-002.json"
    events_key = f"{base}/events-002.jsonl"
    assert object_keys(s3, bucket) == [events_key, summary_key, transcript_key]
    transcript = body(s3, bucket, transcript_key)
    assert [json.loads(line) for line in transcript.splitlines()] == REDACTED_TRANSCRIPT
    assert json.loads(body(s3, bucket, summary_key)) == REDACTED_SUMMARY
    logged = [json.loads(line) for line in body(s3, bucket, events_key).splitlines()]
    assert [(e["event"], e.get("s3_key")) for e in logged] == [
        ("compact.trigger_decision", None),
        ("compact.archival", transcript_key),
        ("compact.archival", summary_key),
    ]
    for key in (transcript_key, summary_key, events_key):
        data = body(s3, bucket, key)
        for secret in SECRETS:
            assert secret not in data, key
        head = s3.head_object(Bucket=bucket, Key=key)
        assert head["ServerSideEncryption"] == "aws:kms"
        assert head["SSEKMSKeyId"] == key_id
    assert (handed.transcript, handed.summary, handed.events) == before

    assert [dict(e.fields) for e in produced] == [
        {
            "step": 2,
            "storage_adapter": "s3",
            "artifact": "transcript",
            "bucket": bucket,
            "s3_key": transcript_key,
            "item_count": 3,
            "bytes": len(transcript),
        },
        {
            "step": 2,
            "storage_adapter": "s3",
            "artifact": "summary",
            "bucket": bucket,
            "s3_key": summary_key,
            "item_count": 1,
            "bytes": len(body(s3, bucket, summary_key)),
        },
    ]


def test_s3_without_kms_key_and_prefix(s3: S3Client, bucket: str) -> None:
    sink = S3Sink(bucket, client=s3)
    sink.deliver(delivery(1, session_id="../../etc", summary=None))
    sink.deliver(delivery(2, session_id="../../etc", summary=None))
    assert object_keys(s3, bucket) == [
        "%2E.%2F..%2Fetc/events-001.jsonl",
        "%2E.%2F..%2Fetc/events-002.jsonl",
        "%2E.%2F..%2Fetc/transcript-pre-compact-001.jsonl",
        "%2E.%2F..%2Fetc/transcript-pre-compact-002.jsonl",
    ]
    head = s3.head_object(Bucket=bucket, Key="%2E.%2F..%2Fetc/transcript-pre-compact-001.jsonl")
    assert head.get("ServerSideEncryption") != "aws:kms"
    assert "SSEKMSKeyId" not in head


def test_s3_unknown_bucket_is_a_clear_error(s3: S3Client) -> None:
    with pytest.raises(SessionStoreError) as info:
        S3Sink("no-such-bucket-x1", prefix="p", client=s3, kms_key_id="alias/a").deliver(delivery())
    assert isinstance(info.value, ArchiveSinkError)
    assert str(info.value) == (
        "cannot upload transcript-pre-compact-001.jsonl of session 'sess-1' to"
        " s3://no-such-bucket-x1/p/ (NoSuchBucket): check that the bucket exists and that this"
        " process's AWS role may s3:PutObject and kms:GenerateDataKey on the KMS key"
    )
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_s3_unreachable_endpoint_is_a_clear_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    sink = S3Sink("b", client=s3_client(f"http://127.0.0.1:{port}"))
    with pytest.raises(
        ArchiveSinkError, match=r"^cannot upload transcript-pre-compact-001.jsonl of"
    ):
        sink.deliver(delivery())


def test_s3_non_botocore_errors_propagate() -> None:
    class Broken:
        def put_object(self, **_: Any) -> None:
            raise RuntimeError("a bug, not an AWS failure")

    with pytest.raises(RuntimeError, match="a bug"):
        S3Sink("b", client=Broken()).deliver(delivery())

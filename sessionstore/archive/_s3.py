"""The S3 archival sink (storage adapter "s3"): the filesystem layout as object keys.

Objects go to `s3://{bucket}/{prefix}/{session}/`. S3 cannot append, so instead of one growing
`events.jsonl` each step writes its own `events-{step:03d}.jsonl` (list the prefix to read the
log in order). The client is injected: production builds it from the IAM role / default
credential chain, so no credentials ever appear here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._errors import ArchiveSinkError
from .._events import Event
from .._redaction import Redactor
from ._sinks import (
    ArchiveDelivery,
    archival_event,
    build_artifacts,
    event_lines,
    preamble,
    safe_name,
)

__all__ = ["S3Sink"]


class S3Sink:
    """Uploads each delivery, with SSE-KMS under `kms_key_id` when one is configured."""

    name: str = "s3"

    def __init__(
        self,
        bucket: str,
        *,
        prefix: str = "",
        client: Any,
        kms_key_id: str | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        if not bucket.strip():
            raise ValueError("S3Sink needs a bucket name")
        self._bucket = bucket
        self._prefix = prefix.strip("/")
        self._client = client
        self._encryption: Mapping[str, str] = (
            {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": kms_key_id} if kms_key_id else {}
        )
        self._redactor = Redactor() if redactor is None else redactor

    @property
    def bucket(self) -> str:
        return self._bucket

    def key(self, session_id: str, filename: str) -> str:
        """The object key of one artifact: the session id is one safe segment."""
        return "/".join(part for part in (self._prefix, safe_name(session_id), filename) if part)

    def deliver(self, delivery: ArchiveDelivery) -> list[Event]:
        artifacts = build_artifacts(delivery, self._redactor)
        produced = preamble(delivery, self._redactor)
        for artifact in artifacts:
            key = self.key(delivery.session_id, artifact.filename)
            self._put(key, artifact.body, artifact.content_type, delivery.session_id)
            location = {"bucket": self._bucket, "s3_key": key}
            produced.append(archival_event(delivery, artifact, "s3", location))
        events_key = self.key(delivery.session_id, f"events-{delivery.step:03d}.jsonl")
        body = event_lines([*delivery.events, *produced], self._redactor)
        self._put(events_key, body, "application/x-ndjson", delivery.session_id)
        return produced

    def _put(self, key: str, body: bytes, content_type: str, session_id: str) -> None:
        try:
            self._client.put_object(
                Bucket=self._bucket,
                Key=key,
                Body=body,
                ContentType=content_type,
                **self._encryption,
            )
        except Exception as exc:
            mapped = self._translate(exc, key, session_id)
            if mapped is None:
                raise
            # Not chained: botocore's parameter errors can quote the request, i.e. the body.
            raise mapped from None

    def _translate(self, exc: Exception, key: str, session_id: str) -> ArchiveSinkError | None:
        """Our error for a botocore failure; None for anything else (a bug: let it raise)."""
        response = getattr(exc, "response", None)
        error = response.get("Error") if isinstance(response, dict) else None
        code = error.get("Code") if isinstance(error, dict) else None
        if not isinstance(code, str):
            if not any(cls.__module__.startswith("botocore") for cls in type(exc).__mro__):
                return None
            code = type(exc).__name__
        kms = " and kms:GenerateDataKey on the KMS key" if self._encryption else ""
        # The session is named by its id, which the error's redactor reads; the key's
        # percent-encoded segment would carry a key in the id past it (issue #34).
        where = "/".join(part for part in (self._bucket, self._prefix) if part)
        return ArchiveSinkError(
            f"cannot upload {key.rsplit('/', 1)[-1]} of session {session_id!r} to s3://{where}/"
            f" ({code}): check that the bucket exists and that this process's AWS role may"
            f" s3:PutObject{kms}"
        )

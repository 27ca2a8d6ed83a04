"""Archives: the originals a compaction replaced, or a truncated tool output's full text.

Archives live in the database (sealed when a keyring is configured); `read_archives`
opens them. Sinks copy each compaction (redacted) to files or S3 as well. The modules
behind these names are private.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._filesystem import FilesystemSink
from ._reader import ArchiveInfo, OpenedArchive, list_archives, read_archives
from ._sinks import ArchiveDelivery, ArchiveSink, Artifact

if TYPE_CHECKING:
    from ._s3 import S3Sink

__all__ = [
    "ArchiveDelivery",
    "ArchiveInfo",
    "ArchiveSink",
    "Artifact",
    "FilesystemSink",
    "OpenedArchive",
    "S3Sink",
    "list_archives",
    "read_archives",
]


def __getattr__(name: str) -> Any:
    # The S3 sink needs boto3 (the `[s3]` extra): loaded when first asked for.
    if name == "S3Sink":
        from ._s3 import S3Sink

        globals()[name] = S3Sink
        return S3Sink
    raise AttributeError(f"module 'sessionstore.archive' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

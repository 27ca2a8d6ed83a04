"""The filesystem archival sink (storage adapter "fs"), in the layout docs/CONFIGURATION.md shows.

`{root}/{session}/transcript-pre-compact-{step:03d}.jsonl`, `summary-{step:03d}.json` and an
`events.jsonl` log that grows with every step. Files hold conversation data, so they are
owner-only (0600, directories 0700), and the session id, which is user data, is turned into a
single safe path segment.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Final

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

__all__ = ["DEFAULT_ROOT", "EVENTS_FILE", "FilesystemSink"]

DEFAULT_ROOT: Final = ".compact/archive"
EVENTS_FILE: Final = "events.jsonl"
_DIR_MODE: Final = 0o700
_FILE_MODE: Final = 0o600


class FilesystemSink:
    """Writes each delivery under `root`; transcript and summary atomically, events appended."""

    name: str = "fs"

    def __init__(
        self, root: str | Path = DEFAULT_ROOT, *, redactor: Redactor | None = None
    ) -> None:
        self._root = Path(root)
        self._redactor = Redactor() if redactor is None else redactor

    @property
    def root(self) -> Path:
        return self._root

    def session_dir(self, session_id: str) -> Path:
        """Where a session's artifacts go: always a direct child of `root`."""
        return self._root / safe_name(session_id)

    def deliver(self, delivery: ArchiveDelivery) -> list[Event]:
        artifacts = build_artifacts(delivery, self._redactor)
        produced = preamble(delivery, self._redactor)
        directory = self.session_dir(delivery.session_id)
        try:
            self._root.parent.mkdir(parents=True, exist_ok=True)
            _private_dir(self._root)
            _private_dir(directory)
            for artifact in artifacts:
                path = directory / artifact.filename
                _write_atomic(path, artifact.body)
                produced.append(archival_event(delivery, artifact, "fs", {"file_path": str(path)}))
            _append(
                directory / EVENTS_FILE, event_lines([*delivery.events, *produced], self._redactor)
            )
            _fsync_dir(directory)
        except OSError as exc:
            # The session is named by its id, which the error's redactor reads; its folder's
            # percent-encoded name would carry a key in the id past the redactor (issue #34).
            raise ArchiveSinkError(
                f"cannot write the archive of step {delivery.step} of session "
                f"{delivery.session_id!r} under {self._root}: "
                f"{exc.strerror or type(exc).__name__}"
            ) from None
        return produced


def _private_dir(path: Path) -> None:
    """Create `path` owner-only; an existing directory is left as its owner set it up."""
    try:
        path.mkdir(mode=_DIR_MODE)
    except FileExistsError:
        return
    path.chmod(_DIR_MODE)  # mkdir's mode is filtered by the umask


def _write_atomic(path: Path, body: bytes) -> None:
    """Readers see the old file or the new one, never a torn one (temp file + os.replace).

    mkstemp creates the file 0600 whatever the umask, so the data is never briefly readable.
    """
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(body)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


def _append(path: Path, body: bytes) -> None:
    """Append to the log with O_APPEND rather than rewrite-and-replace.

    A rewrite would drop lines another writer appended meanwhile; O_APPEND cannot. A crash can
    at worst tear the last line, so a missing final newline is restored before appending.
    """
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, _FILE_MODE)
    try:
        os.fchmod(fd, _FILE_MODE)  # also tightens a log someone else created
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            body = b"\n" + body
        view = memoryview(body)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path) -> None:
    """Make the renames durable: os.replace is only on disk once its directory is."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

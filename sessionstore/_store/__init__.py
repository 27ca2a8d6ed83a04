"""The store: `SessionStore`, the one facade every service and adapter writes and reads
through. The class lives in `_session_store`; its transactions in `_writes` and `_reads`."""

from ._session_store import DEFAULT_MODEL, SessionStore

__all__ = ["DEFAULT_MODEL", "SessionStore"]

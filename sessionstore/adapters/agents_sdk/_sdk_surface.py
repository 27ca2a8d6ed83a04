"""The public surface of the Agents SDK's SQL sessions that SQLSession adds to its own.

`SQLSession` is a drop-in for `SQLiteSession`, `SQLAlchemySession` and
`AdvancedSQLiteSession`: a ported program may call any of their public methods. The
history methods (`get_items`, `add_items`, ...), `engine` and `from_url` are SQLSession's
own; the branch calls, turn readers and usage calls live in the mixins gathered here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._sdk_branches import SDKBranchesMixin
from ._sdk_turns import SDKTurnsMixin
from ._sdk_usage import SDKUsageMixin

if TYPE_CHECKING:
    from agents.memory.session_settings import SessionSettings


class SDKSurface(SDKBranchesMixin, SDKUsageMixin, SDKTurnsMixin):
    """AdvancedSQLiteSession's branch, turn and usage calls, with the SDK's signatures."""

    # The SDK's classes declare it at class level (SessionABC): `SQLSession.session_settings`
    # reads as it does there; every instance sets its own.
    session_settings: SessionSettings | None = None

"""A process that prepares one session's compaction in the background, for the tests that
need two real processes on one database (`python -m tests.support.background_worker`).

Modes: `prepare` summarizes (slowly, so two workers overlap) and prints how many summarizer
calls it made; `crash` takes the lease and dies inside the summarizer, as a killed process
would, without releasing anything; `hang` takes the lease, prints `holding` and waits inside
the summarizer for the test to kill it (SIGKILL).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

from sessionstore import SessionStore
from sessionstore.compaction._summarizers._summarizer import SummaryRequest, SummaryResult
from tests.support.background import SlowSummarizer, background_manager

CRASH_EXIT = 3
HOLDING = "holding"


class CrashingSummarizer(SlowSummarizer):
    """Dies mid-call: the process exits with no cleanup, like a kill -9."""

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        os._exit(CRASH_EXIT)


class HangingSummarizer(SlowSummarizer):
    """Says it holds the lease, then waits to be killed."""

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        print(HOLDING, flush=True)
        await asyncio.Event().wait()
        raise AssertionError("a hanging summarizer is killed, never woken")


async def main(url: str, session_id: str, mode: str, lease_s: float) -> None:
    async with SessionStore(url) as store:
        kinds = {"crash": CrashingSummarizer, "hang": HangingSummarizer}
        kind = kinds.get(mode, SlowSummarizer)
        summarizer = kind(store.estimator, delay_s=0.5)
        manager = background_manager(store, summarizer, lease_s=lease_s)
        assert manager.background is not None
        await manager.maybe_compact(session_id)
        await manager.background.settle()
        print(json.dumps({"calls": summarizer.calls, "holder": manager.background.holder}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])))

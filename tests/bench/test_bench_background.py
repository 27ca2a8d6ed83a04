"""bench/bench_background.py's agent loop, small: through the real SDK adapter, every
background session's compacting turn commits a prepared summary, no foreground one does,
and both end with the same number of compactions."""

from __future__ import annotations

import sys

from tests.support.paths import REPO_ROOT
from tests.support.scripts import load_script


async def test_the_bench_loop_commits_prepared_summaries_only_in_the_background(
    sqlite_url: str,
) -> None:
    sys.path.insert(0, str(REPO_ROOT / "bench"))  # the script imports its sibling scratch_pg
    try:
        bench = load_script(REPO_ROOT / "bench" / "bench_background.py")
    finally:
        sys.path.remove(str(REPO_ROOT / "bench"))
    runs = {}
    for background in (False, True):
        runs[background] = await bench.trigger_latencies(
            sqlite_url, background=background, sessions=2, summarizer_s=0.0, model_s=0.0
        )
    (foreground, fg_committed), (background_runs, bg_committed) = runs[False], runs[True]
    assert (fg_committed, bg_committed) == (0, 2)
    assert len(foreground) == len(background_runs) == 2
    # The same conversation reaches the trigger on the same turn either way.
    assert [t.turns for t in foreground] == [t.turns for t in background_runs]
    assert bench.percentile([3.0, 1.0, 2.0], 0.5) == 2.0

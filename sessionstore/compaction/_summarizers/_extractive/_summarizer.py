"""A deterministic, offline summarizer: the embedded default and the fallback of last resort.

It never paraphrases. Sentences are kept verbatim (a reason stays with the sentence it
explains) and filed into sections by keyword rules; the prior summary is parsed back into the
same facts and carried line for line, so a fact survives any number of rounds (no
summary-of-summary drift) until the token budget forces the lowest-priority lines out: tool
chatter first, then notes and file names, then preferences and actions; goals, ids,
constraints and decisions last; the latest user request never (it is only truncated when it
alone is too long).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ...._tokens import TokenEstimator, estimator_for_model
from .._collapse import is_progress, routine, templates_of
from .._prompts import Entry, transcript_entries
from .._summarizer import SummaryRequest, SummaryResult
from ._facts import ELLIPSIS, LAYOUTS, NO_CONTEXT, Fact, Layout
from ._merge import (
    condensed,
    current,
    dedupe,
    drop_order,
    render,
    salience,
    settled,
    stated,
    stated_sentences,
)
from ._prior import Prior, parse_summary
from ._reader import Reader, is_summary
from ._rules import squash


class ExtractiveSummarizer:
    """Rule-based summaries: no network, no model, identical output for identical input."""

    name = "extractive"
    input_window: int | None = None

    def __init__(self, estimator: TokenEstimator | None = None) -> None:
        self._estimator = estimator or estimator_for_model("gpt-4o")

    async def summarize(self, request: SummaryRequest) -> SummaryResult:
        """Carry the prior summary's facts, add the new ones, and fit them in max_tokens.

        On a worker thread: summarizing thousands of items would stall the event loop.
        """
        text = await asyncio.to_thread(self.render, request)
        return SummaryResult(text=text, output_tokens=self._estimator.count_text(text))

    def render(self, request: SummaryRequest) -> str:
        """The summary text (synchronous: there is nothing to wait for)."""
        layout = LAYOUTS.get(request.strategy, LAYOUTS["task_state"])
        entries = transcript_entries(request.items)
        facts, latest = self._collect(request, entries)
        kinds = {kind for section in layout.sections for kind in section.kinds}
        tools = [fact for fact in facts if fact.kind == "tool"]
        limit = len(tools) if layout.tool_limit is None else layout.tool_limit
        stale = set(tools[: len(tools) - limit])
        facts = [fact for fact in facts if fact.kind in kinds and fact not in stale]
        if not facts and latest is None:
            facts = dedupe(condensed(entries))  # nothing matched a rule: the transcript
        if not facts and latest is None:
            return self._clip_to(NO_CONTEXT, request.max_tokens) or ""
        return self._fit(layout, facts, latest, request.max_tokens)

    def _collect(
        self, request: SummaryRequest, entries: list[Entry]
    ) -> tuple[list[Fact], str | None]:
        users = [
            e for e in entries if e.kind == "message" and e.label == "user" and not is_summary(e)
        ]
        latest = users[-1] if users else None
        kept = stated_sentences(request.kept)
        reader = Reader(entries)
        reader.read(skip=latest, kept=[*([latest.text] if latest else []), *kept])
        prior = Prior()
        for summary in [request.prior_summary or "", *reader.embedded]:
            parsed = parse_summary(summary)
            prior.facts.extend(parsed.facts)
            prior.request = parsed.request or prior.request
        request_text = squash(latest.text) if latest else prior.request
        if latest is not None and prior.request and prior.request != request_text:
            # The earlier request is history now: keep what it said, filed like any message.
            demoted = Reader([])
            demoted.read_text(prior.request, 0, weak=False, user=True)
            prior.facts.extend(demoted.facts)
        pinned = [Fact("pinned", squash(key)) for key in request.keep_keys if key.strip()]
        carried = current(prior.facts, stated(entries), kept)
        later = [latest.text] if latest else []
        standing = dedupe([*pinned, *carried])  # each other's current state already
        facts = settled(dedupe([*standing, *reader.facts]), [*later, *kept], len(standing))
        bodies = [fact.body() for fact in facts]
        if request_text and routine(request_text, templates_of([*bodies, request_text])):
            # "Continue with step 212" is progress, not a request to remember as the latest:
            # it joins its template's line, which says what was done and what comes next.
            demoted = Reader([])
            demoted.read_text(request_text, len(entries), weak=False, user=True)
            return dedupe([*facts, *demoted.facts]), None
        return facts, request_text

    def _fit(self, layout: Layout, facts: list[Fact], request: str | None, max_tokens: int) -> str:
        """Drop the lowest-priority, least salient facts until the summary fits."""
        count = self._estimator.count_text
        full = render(layout, facts, request)
        estimate = count(full)
        if estimate <= max_tokens:
            return full
        weights = salience(facts)
        counts = templates_of([fact.body() for fact in facts])
        routines = [routine(fact.body(), counts) and not is_progress(fact.body()) for fact in facts]
        order = sorted(
            range(len(facts)),
            key=lambda i: drop_order(facts[i], weights[i], i, routines[i]),
        )

        def without(drops: int) -> str | None:
            """The summary less the first `drops` facts of the order, if it fits."""
            gone = set(order[:drops])
            text = render(layout, [f for i, f in enumerate(facts) if i not in gone], request)
            return text if count(text) <= max_tokens else None

        # Generous, so the estimate never hides room that is really there: the first prefix
        # it says fits is the least that could. Only an exact count of the rendered text
        # decides, found by bisection (a line collapsed with its template saves less than its
        # own length, and re-rendering after every further drop cost hundreds of renders).
        least = None
        for drops, index in enumerate(order, start=1):
            estimate -= count(facts[index].ledger or facts[index].body()) + 4
            if estimate <= max_tokens:
                least = drops
                break
        if least is not None:
            text = without(least)
            if text is not None:
                return text
            low, high, best = least, len(order), without(len(order))
            while best is not None and high - low > 1:
                middle = (low + high) // 2
                found = without(middle)
                if found is None:
                    low = middle
                else:
                    high, best = middle, found
            if best is not None:
                return best
        if request:
            clipped = self._clip_to(request, max_tokens, lambda r: render(layout, [], r))
            if clipped is not None:
                return clipped
        return self._clip_to(full, max_tokens) or ""

    def _clip_to(self, text: str, max_tokens: int, wrap: Callable[[str], str] = str) -> str | None:
        """wrap(text), or wrap(longest prefix + "…") that fits; None if not even "…" fits."""
        if self._estimator.count_text(wrap(text)) <= max_tokens:
            return wrap(text)

        def fits(size: int) -> bool:
            return self._estimator.count_text(wrap(text[:size].rstrip() + ELLIPSIS)) <= max_tokens

        if not fits(0):
            return None
        low, high = 0, len(text)
        while low < high:
            middle = (low + high + 1) // 2
            if fits(middle):
                low = middle
            else:
                high = middle - 1
        return wrap(text[:low].rstrip() + ELLIPSIS)


def current_state(request: SummaryRequest) -> list[str]:
    """The state lines of `request` as this summarizer settles them: each tool-output value
    the conversation used and each statement that replaced an earlier value, newest only.
    What a model summarizer is given to keep (SummaryRequest.state)."""
    facts, _ = ExtractiveSummarizer()._collect(request, transcript_entries(request.items))
    return [
        fact.body()
        for fact in facts
        if (fact.kind == "state" and not fact.weak and not fact.silent) or "(was " in fact.text
    ]

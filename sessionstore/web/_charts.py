"""Server-rendered charts: numbers in, SVG geometry out (no script, no stored text).

The context's size is rebuilt from the rows' typed columns (tokens, kind, compaction id),
so a chart of a 10,000-row session reads no payload; each compaction is drawn as the drop
its row in `compactions` records, the window and the trigger as lines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

WIDTH: Final = 860
HEIGHT: Final = 260
PAD_LEFT: Final = 64
PAD_RIGHT: Final = 16
PAD_TOP: Final = 14
PAD_BOTTOM: Final = 32
MAX_POINTS: Final = 1_500  # a longer series is thinned (every drop is kept)

Step = tuple[int, str, str | None, int, int | None, int | None]


@dataclass(frozen=True, slots=True)
class Drop:
    """A compaction: at turn `turn` the context went from `before` to `after` tokens."""

    turn: float
    before: int
    after: int
    compaction_id: int
    version: int | None


@dataclass(slots=True)
class TokenSeries:
    """The context's size (tokens) at the end of each turn, with each compaction's drop."""

    points: list[tuple[float, int]] = field(default_factory=list)
    drops: list[Drop] = field(default_factory=list)


def token_series(steps: Sequence[Step], compactions: Sequence[Mapping[str, Any]]) -> TokenSeries:
    """Replay the history's rows: items, carries and summaries add their tokens, a pop takes
    its row's back, a clear (or rewind) starts from zero, a compaction drops the total to
    what it recorded after it."""
    by_id = {int(c["id"]): c for c in compactions}
    tokens_at: dict[int, int] = {}
    seen: set[int] = set()
    series = TokenSeries()
    running = 0
    turn = 0
    for seq, kind, role, tokens, ref_seq, compaction_id in steps:
        tokens_at[seq] = tokens
        if compaction_id is not None and compaction_id in by_id:
            if compaction_id not in seen:
                seen.add(compaction_id)
                record = by_id[compaction_id]
                before = int(record.get("tokens_before") or running)
                after = int(record.get("tokens_after") or 0)
                series.points.append((turn + 0.5, before))
                series.points.append((turn + 0.5, after))
                version = record.get("version")
                series.drops.append(
                    Drop(
                        turn + 0.5,
                        before,
                        after,
                        compaction_id,
                        None if version is None else int(version),
                    )
                )
                running = after
            continue  # the compaction's own rows are in `tokens_after`
        if kind == "item" and role == "user":
            series.points.append((turn, running))
            turn += 1
        if kind in ("item", "carry", "summary"):
            running += tokens
        elif kind == "tombstone" and ref_seq is not None:
            running = max(0, running - tokens_at.get(ref_seq, 0))
        elif kind == "clear":
            running = 0
    series.points.append((turn, running))
    if len(series.points) > MAX_POINTS:  # keep the shape, and every drop
        stride = len(series.points) // MAX_POINTS + 1
        drops = {(d.turn, d.before) for d in series.drops} | {
            (d.turn, d.after) for d in series.drops
        }
        series.points = [
            p for i, p in enumerate(series.points) if i % stride == 0 or p in drops
        ] + [series.points[-1]]
    return series


@dataclass(frozen=True, slots=True)
class Tick:
    """An axis label at a pixel position."""

    at: float
    label: str


@dataclass(frozen=True, slots=True)
class Line:
    """A horizontal or vertical rule with a label."""

    x1: float
    y1: float
    x2: float
    y2: float
    label: str


@dataclass(frozen=True, slots=True)
class TokenChart:
    """Everything the SVG template draws."""

    width: int
    height: int
    path: str
    drops: list[Line]
    window: Line | None
    trigger: Line | None
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    empty: bool


def _nice_ticks(top: float, count: int = 5) -> list[float]:
    if top <= 0:
        return [0.0]
    raw = top / count
    magnitude = 10 ** (len(str(int(raw))) - 1) if raw >= 1 else 1
    step = max(1, round(raw / magnitude)) * magnitude
    return [float(step * i) for i in range(int(top // step) + 1)]


def token_chart(series: TokenSeries, window: int | None, trigger_share: float | None) -> TokenChart:
    """The series laid out on a WIDTH x HEIGHT canvas."""
    xs = [x for x, _ in series.points] or [0.0]
    top = max([y for _, y in series.points] + [window or 0, 1]) * 1.08
    last_x = max(max(xs), 1.0)
    plot_w = WIDTH - PAD_LEFT - PAD_RIGHT
    plot_h = HEIGHT - PAD_TOP - PAD_BOTTOM

    def px(x: float) -> float:
        return round(PAD_LEFT + plot_w * x / last_x, 1)

    def py(y: float) -> float:
        return round(PAD_TOP + plot_h * (1 - y / top), 1)

    path = " ".join(
        f"{'M' if i == 0 else 'L'}{px(x)},{py(y)}" for i, (x, y) in enumerate(series.points)
    )
    drops = [
        Line(
            px(d.turn),
            py(d.before),
            px(d.turn),
            py(d.after),
            f"v{d.version}: {d.before:,} → {d.after:,}",
        )
        for d in series.drops
    ]
    window_line = (
        None
        if window is None
        else Line(PAD_LEFT, py(window), WIDTH - PAD_RIGHT, py(window), f"window {window:,}")
    )
    trigger_line = None
    if window is not None and trigger_share is not None:
        at = window * trigger_share
        trigger_line = Line(PAD_LEFT, py(at), WIDTH - PAD_RIGHT, py(at), f"trigger {int(at):,}")
    x_ticks = [Tick(px(t), f"{int(t)}") for t in _nice_ticks(last_x, 8)]
    y_ticks = [Tick(py(t), f"{int(t):,}") for t in _nice_ticks(top / 1.08)]
    return TokenChart(
        WIDTH,
        HEIGHT,
        path,
        drops,
        window_line,
        trigger_line,
        x_ticks,
        y_ticks,
        empty=len(series.points) <= 1,
    )


@dataclass(frozen=True, slots=True)
class Bar:
    """One bar of the per-turn usage chart (input and output stacked)."""

    x: float
    width: float
    input_y: float
    input_h: float
    output_y: float
    output_h: float
    label: str


def _input(used: Mapping[str, Any]) -> int:
    """Input tokens as the provider reported them, else as estimated before the call."""
    return int(used.get("input_tokens") or used.get("estimated") or 0)


def usage_bars(per_turn: Mapping[int, Mapping[str, Any]]) -> tuple[list[Bar], int, int]:
    """Input and output tokens per turn as stacked bars; with the canvas's width and height."""
    turns = sorted(per_turn)
    if not turns:
        return [], WIDTH, 120
    height = 120
    plot_h = height - 20
    top = max(_input(per_turn[t]) + int(per_turn[t].get("output_tokens") or 0) for t in turns) or 1
    slot = (WIDTH - PAD_LEFT - PAD_RIGHT) / len(turns)
    bars = []
    for index, turn in enumerate(turns):
        used = per_turn[turn]
        inp = _input(used)
        out = int(used.get("output_tokens") or 0)
        ih = plot_h * inp / top
        oh = plot_h * out / top
        x = PAD_LEFT + slot * index
        bars.append(
            Bar(
                round(x, 1),
                round(max(slot * 0.8, 1), 1),
                round(plot_h - ih, 1),
                round(ih, 1),
                round(plot_h - ih - oh, 1),
                round(oh, 1),
                f"turn {turn}: {inp:,} in, {out:,} out",
            )
        )
    return bars, WIDTH, height

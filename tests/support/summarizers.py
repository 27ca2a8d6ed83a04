"""The type of the compaction tests' `summarizers` fixture (tests/compaction/conftest.py)."""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

from sessionstore.compaction._summarizers._openai import OpenAISummarizer

S = TypeVar("S", bound=OpenAISummarizer)


class SummarizerMaker(Protocol):
    """`make(OpenAISummarizer, "gpt-4o-mini", **options)`: one pointed at the live server."""

    def __call__(self, kind: type[S], model: str, /, **options: Any) -> S: ...

"""Sentence splitting in English, German and Spanish prose."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionstore.compaction._summarizers._sentences import split_sentences


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (
            "Der Launch wurde auf den 3. September verschoben. Danach prüfen wir die Logs.",
            ["Der Launch wurde auf den 3. September verschoben.", "Danach prüfen wir die Logs."],
        ),
        (
            "Wir prüfen z. B. die Logs bzw. die Metriken. Fertig.",
            ["Wir prüfen z. B. die Logs bzw. die Metriken.", "Fertig."],
        ),
        (
            "Jede Änderung braucht das OK von Fr. Bergmann.",
            ["Jede Änderung braucht das OK von Fr. Bergmann."],
        ),
        ("Am 1.2. ist Deadline. Ok.", ["Am 1.2. ist Deadline.", "Ok."]),
        (
            "El Sr. García confirmó el 3 de septiembre. ¿Lo confirmas? ¡Sí! El disco tiene 3,5 GB.",
            [
                "El Sr. García confirmó el 3 de septiembre.",
                "¿Lo confirmas?",
                "¡Sí!",
                "El disco tiene 3,5 GB.",
            ],
        ),
        (
            "It was 42. Then we moved on. Version 3.5 is out! See e.g. Fig. 3. Dr. Smith agrees.",
            [
                "It was 42.",
                "Then we moved on.",
                "Version 3.5 is out!",
                "See e.g. Fig. 3.",
                "Dr. Smith agrees.",
            ],
        ),
        ('He said "done." Then left.', ['He said "done."', "Then left."]),
        (
            "Über den Server: alles gut. Ärger gibt es nicht.",
            ["Über den Server: alles gut.", "Ärger gibt es nicht."],
        ),
    ],
)
def test_sentences_end_where_a_new_one_starts(line: str, expected: list[str]) -> None:
    assert list(split_sentences(line)) == expected


@given(st.text(max_size=300))
def test_splitting_loses_no_text(line: str) -> None:
    joined = "".join(split_sentences(line))
    assert "".join(joined.split()) == "".join(line.split())

"""`frozen`: read-only to the type checker, and compared and hashed as a frozen dataclass."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mypy import api as mypy_api

from sessionstore import _frozen as frozen_module
from sessionstore._frozen import frozen


@frozen
class _Pair:
    key: int
    note: str | None = dataclasses.field(default=None, compare=False)


@dataclasses.dataclass(frozen=True, slots=True)
class _FrozenPair:
    key: int
    note: str | None = dataclasses.field(default=None, compare=False)


_notes = st.none() | st.text(max_size=5)


@given(st.integers(), _notes, st.integers(), _notes)
def test_a_frozen_class_compares_and_hashes_as_the_frozen_dataclass_would(
    key: int, note: str | None, other_key: int, other_note: str | None
) -> None:
    ours, theirs = _Pair(key, note), _FrozenPair(key, note)
    assert hash(ours) == hash(theirs)
    assert (ours == _Pair(other_key, other_note)) == (theirs == _FrozenPair(other_key, other_note))
    assert dataclasses.replace(ours, key=other_key) == _Pair(other_key, note)
    assert not hasattr(ours, "__dict__")  # slotted


@pytest.mark.slow  # runs mypy: left out of the everyday subset
def test_the_type_checker_refuses_to_assign_a_field_of_a_frozen_class(tmp_path: Path) -> None:
    # The module checked on its own (importing it from the package would have mypy check
    # the whole package): what it declares, frozen by default, is what mypy enforces.
    (tmp_path / "declares.py").write_text(Path(frozen_module.__file__ or "").read_text())
    (tmp_path / "assigns.py").write_text(
        textwrap.dedent(
            """
            from declares import frozen

            @frozen
            class Row:
                seq: int

            def renumber(row: Row) -> None:
                row.seq = 1
            """
        )
    )
    out, _err, status = mypy_api.run(
        ["--strict", "--cache-dir", str(tmp_path / "cache"), str(tmp_path / "assigns.py")]
    )
    assert status == 1, out
    assert 'Property "seq" defined in "Row" is read-only' in out

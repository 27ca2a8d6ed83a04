"""`frozen`: the dataclass decorator of the value types built by the thousand on hot paths.

A frozen dataclass sets every field through `object.__setattr__`: a `StoredRow` (16 fields)
took 3-5 us to build against about 1 us for the same class unfrozen, and a compaction builds
one per row of the context, an append one `ItemInfo` per item. These classes are frozen for
the type checker (mypy strict refuses any assignment to a field, as for a frozen dataclass)
and plain slotted dataclasses at run time, hashed and compared exactly as frozen ones are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar, dataclass_transform

_T = TypeVar("_T")


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def frozen(cls: type[_T]) -> type[_T]:
    """`cls` as a slotted dataclass, read-only to the type checker (see the module)."""
    return dataclass(slots=True, unsafe_hash=True)(cls)

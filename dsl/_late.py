"""Late records: what a windowed operator drops, how many, and who is told.

A windowed aggregation drops a record whose windows have all closed (see
``_windows``). It counts the drop under the operator's name in the builder's
:class:`LateRecords` (shared by every task of the program in this process) and, when
the program passed ``on_late``, calls it with a :class:`LateRecord`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class LateRecord:
    """One dropped record and why: its timestamp against the operator's stream time."""

    operator: str
    task_id: str
    key: Any
    value: Any
    timestamp: int
    stream_time: int


LateCallback = Callable[[LateRecord], None]


class LateRecords:
    """Counts of records dropped as late, per windowed operator.

    >>> late = LateRecords()
    >>> late.add("KSTREAM-AGGREGATE-0000000002", 3)
    >>> late.count(), late.count("KSTREAM-AGGREGATE-0000000002"), late.count("other")
    (3, 3, 0)
    """

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    def add(self, operator: str, n: int = 1) -> None:
        self._counts[operator] = self._counts.get(operator, 0) + n

    def count(self, operator: str | None = None) -> int:
        if operator is None:
            return sum(self._counts.values())
        return self._counts.get(operator, 0)

    def by_operator(self) -> dict[str, int]:
        return dict(self._counts)

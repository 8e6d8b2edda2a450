"""Window and Windowed: the key type of windowed and session aggregations."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K")


@dataclass(frozen=True, slots=True, order=True)
class Window:
    """A time interval in milliseconds: ``start`` inclusive, ``end`` exclusive for
    time windows and inclusive for sessions (a session's end is its last record)."""

    start: int
    end: int

    def __post_init__(self) -> None:
        if self.end < self.start:
            raise ValueError(f"window end {self.end} is before its start {self.start}")

    def overlaps(self, other: Window) -> bool:
        return self.start < other.end and other.start < self.end


@dataclass(frozen=True, slots=True)
class Windowed(Generic[K]):
    """A key together with the window it belongs to.

    >>> Windowed("page-1", Window(0, 60_000)).window.end
    60000
    """

    key: K
    window: Window

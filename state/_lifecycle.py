"""The lifecycle every store shares: created, open, closed.

A store may be initialised again after it was closed (a task that moves away and
comes back reuses the same builder output), so CLOSED -> OPEN is allowed.
"""

from __future__ import annotations

import enum

from ._errors import InvalidStoreStateError


class StoreState(enum.Enum):
    CREATED = "created"
    OPEN = "open"
    CLOSED = "closed"


_TRANSITIONS: dict[StoreState, frozenset[StoreState]] = {
    StoreState.CREATED: frozenset({StoreState.OPEN, StoreState.CLOSED}),
    StoreState.OPEN: frozenset({StoreState.CLOSED}),
    StoreState.CLOSED: frozenset({StoreState.OPEN, StoreState.CLOSED}),
}


class StoreLifecycle:
    """Tracks one store's state and refuses transitions the table does not allow."""

    __slots__ = ("name", "state")

    def __init__(self, name: str) -> None:
        self.name = name
        self.state = StoreState.CREATED

    def to(self, new: StoreState) -> None:
        if new not in _TRANSITIONS[self.state]:
            raise InvalidStoreStateError(
                f"store {self.name!r} cannot go from {self.state.value} to {new.value}"
            )
        self.state = new

    def check_open(self) -> None:
        if self.state is not StoreState.OPEN:
            raise InvalidStoreStateError(f"store {self.name!r} is {self.state.value}, not open")

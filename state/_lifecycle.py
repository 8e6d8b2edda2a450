"""The lifecycle every store shares: created, open, closed.

A store may be initialised again after it was closed (a task that moves away and
comes back reuses the same builder output), so CLOSED -> OPEN is allowed.
"""

from __future__ import annotations

import enum
from typing import ClassVar

from headrace.base import Lifecycle, TransitionTable, transition_table

from ._errors import InvalidStoreStateError


class StoreState(enum.Enum):
    CREATED = "created"
    OPEN = "open"
    CLOSED = "closed"


STORE_TRANSITIONS: TransitionTable[StoreState] = transition_table(
    {
        StoreState.CREATED: {StoreState.OPEN, StoreState.CLOSED},
        StoreState.OPEN: {StoreState.CLOSED},
        StoreState.CLOSED: {StoreState.OPEN, StoreState.CLOSED},
    }
)


class StoreLifecycle(Lifecycle[StoreState]):
    """One store's state; a move the table does not allow raises
    ``InvalidStoreStateError``, as does using a store that is not open."""

    __slots__ = ()
    error: ClassVar[type[Exception]] = InvalidStoreStateError

    def __init__(self, name: str) -> None:
        super().__init__(f"store {name!r}", StoreState.CREATED, STORE_TRANSITIONS)

    def check_open(self) -> None:
        if self.state is not StoreState.OPEN:
            raise InvalidStoreStateError(f"{self.owner} is {self.state.value}, not open")

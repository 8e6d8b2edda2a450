"""Named lifecycles with explicit transition tables.

A lifecycle is an enum of states plus a table saying which moves are legal. Objects hold
a :class:`Lifecycle` instead of scattered booleans, so an illegal move (processing after
close, closing twice) is refused in one place with a message naming both states.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Generic, TypeVar

from ._errors import IllegalStateTransition

S = TypeVar("S", bound=enum.Enum)


class Lifecycle(Generic[S]):
    """The current state of one object and the table of moves it may make."""

    __slots__ = ("_owner", "_state", "_table")

    def __init__(self, owner: str, initial: S, table: Mapping[S, frozenset[S]]) -> None:
        self._owner = owner
        self._state = initial
        self._table = table

    @property
    def state(self) -> S:
        return self._state

    def can(self, target: S) -> bool:
        return target in self._table.get(self._state, frozenset())

    def move(self, target: S) -> None:
        if not self.can(target):
            raise IllegalStateTransition(
                f"{self._owner}: cannot go from {self._state.name} to {target.name}"
            )
        self._state = target

    def require(self, *states: S) -> None:
        """Raise unless the current state is one of ``states``."""
        if self._state not in states:
            wanted = " or ".join(s.name for s in states)
            raise IllegalStateTransition(f"{self._owner}: is {self._state.name}, must be {wanted}")


class TaskState(enum.Enum):
    """A task's lifecycle: built, then running (stores and processors initialised), then closed."""

    CREATED = "created"
    RUNNING = "running"
    CLOSED = "closed"


TASK_TRANSITIONS: Mapping[TaskState, frozenset[TaskState]] = {
    TaskState.CREATED: frozenset({TaskState.RUNNING, TaskState.CLOSED}),
    TaskState.RUNNING: frozenset({TaskState.CLOSED}),
    TaskState.CLOSED: frozenset(),
}

"""Named lifecycles: an enum of states and a table of the moves each state may make.

Every stateful object of the project (a partition log, a store, a task, the app, a
group and its members, a transaction, an export) states its lifecycle this way rather
than with booleans spread over a class, and enforces it here, in one place:

- :func:`transition_table` builds a table and checks it is complete (one row per state,
  every target a state of the same enum), so a forgotten row fails at import;
- :class:`Lifecycle` holds one object's current state and refuses a move the table
  does not allow;
- :func:`check_transition` is the same check for a state kept elsewhere (a frozen
  dataclass field).

An illegal move is a bug in the caller, so it raises :class:`IllegalTransitionError`
(or the subclass the owning package names, to keep it inside that package's error tree)
with a message naming the owner and both states.

>>> import enum
>>> class Door(enum.Enum):
...     OPEN = "open"
...     CLOSED = "closed"
>>> DOOR = transition_table({Door.OPEN: {Door.CLOSED}, Door.CLOSED: {Door.OPEN}})
>>> door = Lifecycle("front door", Door.CLOSED, DOOR)
>>> door.move(Door.OPEN)
>>> try:
...     door.move(Door.OPEN)
... except IllegalTransitionError as error:
...     print(error)
front door: cannot go from OPEN to OPEN
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import ClassVar, Generic, TypeVar

S = TypeVar("S", bound=enum.Enum)

TransitionTable = Mapping[S, frozenset[S]]
"""For every state, the states it may move to (an empty set: a terminal state)."""


class IllegalTransitionError(Exception):
    """A lifecycle was asked for a move its table forbids, or used in a state that does
    not allow the operation: a bug in the caller, never retriable.

    ``error_code`` is Kafka's UNKNOWN_SERVER_ERROR, what a broker handler answers when a
    bug of its own stops a request.
    """

    retriable: bool = False
    error_code: int = -1


def transition_table(rows: Mapping[S, Iterable[S]]) -> TransitionTable[S]:
    """A read-only transition table from ``rows``, after checking that every state of
    the enum has a row and that every target belongs to the same enum."""
    if not rows:
        raise ValueError("a transition table needs at least one state")
    states = type(next(iter(rows)))
    missing = [s.name for s in states if s not in rows]
    if missing:
        raise ValueError(f"{states.__name__}: no row for {', '.join(missing)}")
    table: dict[S, frozenset[S]] = {}
    for state, targets in rows.items():
        row = frozenset(targets)
        strangers = [repr(t) for t in row if not isinstance(t, states)]
        if not isinstance(state, states) or strangers:
            raise ValueError(f"{states.__name__}: {state!r} -> {strangers} mixes enums")
        table[state] = row
    return MappingProxyType(table)


def check_transition(
    table: TransitionTable[S],
    old: S,
    new: S,
    owner: str,
    error: type[Exception] = IllegalTransitionError,
) -> None:
    """Raise ``error`` unless ``table`` lets ``old`` move to ``new``."""
    if new not in table[old]:
        raise error(f"{owner}: cannot go from {old.name} to {new.name}")


class Lifecycle(Generic[S]):
    """The current state of one object and the table of moves it may make.

    ``state`` is a plain attribute, cheap to read on a hot path; only :meth:`move`
    changes it. A package whose errors have their own root subclasses this and sets
    ``error`` to its own subclass of :class:`IllegalTransitionError`.
    """

    __slots__ = ("_table", "owner", "state")

    error: ClassVar[type[Exception]] = IllegalTransitionError

    def __init__(self, owner: str, initial: S, table: TransitionTable[S]) -> None:
        if initial not in table:
            raise ValueError(f"{owner}: {initial!r} is not a state of its table")
        self.owner = owner
        self.state = initial
        self._table = table

    def can(self, target: S) -> bool:
        return target in self._table[self.state]

    def move(self, target: S) -> None:
        check_transition(self._table, self.state, target, self.owner, self.error)
        self.state = target

    def require(self, *states: S) -> None:
        """Raise unless the current state is one of ``states``."""
        if self.state not in states:
            wanted = " or ".join(s.name for s in states)
            raise self.error(f"{self.owner}: is {self.state.name}, must be {wanted}")

    def __repr__(self) -> str:
        return f"<Lifecycle {self.owner}: {self.state.name}>"

"""The streams package's lifecycles: :class:`headrace.base.Lifecycle`, raising
:class:`IllegalStateTransition` so the error stays under ``StreamsError``, and the task's
transition table.
"""

from __future__ import annotations

import enum
from typing import ClassVar, TypeVar

from headrace.base import Lifecycle as _Lifecycle
from headrace.base import TransitionTable, transition_table

from ._errors import IllegalStateTransition

S = TypeVar("S", bound=enum.Enum)


class Lifecycle(_Lifecycle[S]):
    """One object's state under its transition table (see :mod:`headrace.base`)."""

    __slots__ = ()
    error: ClassVar[type[Exception]] = IllegalStateTransition


class TaskState(enum.Enum):
    """A task's lifecycle: built, then running (stores and processors initialised), then closed."""

    CREATED = "created"
    RUNNING = "running"
    CLOSED = "closed"


TASK_TRANSITIONS: TransitionTable[TaskState] = transition_table(
    {
        TaskState.CREATED: {TaskState.RUNNING, TaskState.CLOSED},
        TaskState.RUNNING: {TaskState.CLOSED},
        TaskState.CLOSED: set(),
    }
)

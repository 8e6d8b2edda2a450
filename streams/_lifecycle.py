"""The streams package's lifecycles: :class:`headrace.base.Lifecycle`, raising
:class:`IllegalStateTransition` so the error stays under ``StreamsError``, and the task's
transition table.

A task executor (``_task.py``) moves as Kafka Streams' ``StreamTask`` does::

    CREATED --open_stores()--> RESTORING --start()--> RUNNING --close()--> CLOSED
       └──────────────────────────┴─────────close()─────────────┘

``init()`` is ``open_stores()`` then ``start()``, for callers with nothing to restore
(the test driver, the global stores, whose topic is their input).

1. **CREATED -> RESTORING** (``open_stores``): the sub-topology's stores are built and
   opened on the task's state directory. Nothing else exists yet: no processor has been
   built, let alone ``init``-ed. In RESTORING the stores take changelog records
   (``restore_batch``) and nothing more: processing, punctuation, cache flushes and
   async work are refused, because a processor that saw a half-restored store would
   act on state that is not the committed one. A standby replica
   (``runtime/_standby.py``) stays here for as long as it lives.
2. **RESTORING -> RUNNING** (``start``): only now, with every store holding what its
   changelog holds, the nodes are compiled and each processor's ``init`` runs, parents
   first, with the wall clock set to the time of the start. What a processor rebuilds
   from its stores is this step and nothing else; it never comes from memory kept
   across restarts, so a task reopened from a checkpoint, a snapshot plus the
   changelog's tail, the whole changelog, or a promoted standby starts the same way:

   - a windowed aggregation in final-results mode (``emit_final``, and ``suppress``,
     which it carries out; tumbling, hopping, sliding and session windows) reads its
     stream time from its stream-time store, which commits with the results it
     emitted, and waits again for every stored window that closes after that time;
     so no final result is lost (a window known only to the restored tail is waiting
     again) and none is repeated (a window closed by the committed stream time is
     not);
   - its wall-clock idle close, and every wall-clock punctuation a processor schedules
     in ``init``, counts from the start, so a long restore does not make it due early;
   - a stream-stream join's outer side rebuilds its waiting records (the partners not
     yet found) from its outer store on its first batch, which comes after the start;
   - processors that only look up their stores in ``init`` read them when processing,
     which RUNNING alone allows.
3. **-> CLOSED** (``close``): processors that were ``init``-ed are closed, then the
   stores are flushed and closed. A task closed in RESTORING closes its stores only.
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
    """A task executor's lifecycle (module docstring): built, stores open and restoring,
    running (processors initialised on the restored stores), closed."""

    CREATED = "created"
    RESTORING = "restoring"
    RUNNING = "running"
    CLOSED = "closed"


TASK_TRANSITIONS: TransitionTable[TaskState] = transition_table(
    {
        TaskState.CREATED: {TaskState.RESTORING, TaskState.CLOSED},
        TaskState.RESTORING: {TaskState.RUNNING, TaskState.CLOSED},
        TaskState.RUNNING: {TaskState.CLOSED},
        TaskState.CLOSED: set(),
    }
)

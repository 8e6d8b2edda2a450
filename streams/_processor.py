"""What user code implements for the processor API.

Two kinds of processor exist, and a node holds one or the other:

* :class:`Processor` sees one :class:`~streams.Record` at a time, like Kafka's
  ``Processor``: ``init(context)``, ``process(record)``, ``close()``. It forwards with
  ``context.forward(record, to=...)``.
* :class:`BatchProcessor` sees a whole batch of record tuples (``(key, value, timestamp,
  headers, source_offset)``) and forwards lists with ``context.forward_batch``. The DSL's
  operators are batch processors, which is how a chain of them costs one comprehension
  per operator per batch instead of a method call per record per operator.

A processor supplier is any zero-argument callable returning a fresh processor; it is
called once per task, because processors may hold per-task state.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING

from ._async import AsyncProcessor
from ._record import Rec, Record

if TYPE_CHECKING:
    from ._context import ProcessorContext


class PunctuationType(enum.Enum):
    """Which clock drives a punctuation."""

    STREAM_TIME = "stream_time"
    """Advanced by the timestamps of processed records; only moves when data arrives."""

    WALL_CLOCK_TIME = "wall_clock_time"
    """Advanced by the system clock (or the test driver's controlled clock)."""


Punctuator = Callable[[int], None]
"""Called with the current time of its clock (ms) when a punctuation is due."""


class Cancellable:
    """Handle returned by ``schedule``; ``cancel()`` stops further punctuations."""

    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class Processor:
    """A record-at-a-time processor. Subclass and override :meth:`process`.

    The default :meth:`init` keeps the context as ``self.context``.
    """

    context: ProcessorContext

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process(self, record: Record) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Release what :meth:`init` acquired; stores are closed by the task, not here."""


class BatchProcessor:
    """A processor that receives whole batches of record tuples.

    A batch handed to :meth:`process_batch` must not be mutated: the same list may be
    delivered to several children. Build a new list to change it.
    """

    context: ProcessorContext

    def init(self, context: ProcessorContext) -> None:
        self.context = context

    def process_batch(self, batch: list[Rec]) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Release what :meth:`init` acquired."""


# AsyncProcessor: the DSL's async operators; the task runs it apart (``_async``).
AnyProcessor = Processor | BatchProcessor | AsyncProcessor
ProcessorSupplier = Callable[[], AnyProcessor]

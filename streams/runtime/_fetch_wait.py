"""A task waits for its partitions fetched behind, as Kafka Streams' tasks do.

Why: a fetch is bounded in bytes (``fetch_max_bytes``, ``max_partition_fetch_bytes``),
and a backlog on one topic can fill whole fetch responses while another topic of the same
task gets no bytes. A stream-table join fed that way processes the stream ahead of the
table's older records and misses the rows they hold: with a table loaded before a
backlog of views, every partition's first fetch of views joined nothing. Kafka Streams
processes a task only when each of its partitions has records buffered or none left on
the broker (``max.task.idle.ms`` 0, KIP-695); so does headrace.

Each round, step by step (:meth:`FetchWait.take`), for the running tasks with more than
one source partition:

1. the round's records of such a task are added to what is held for their partition;
2. held records whose task was revoked or replaced (a rewind reopens every task) are
   dropped: they were never processed, so never committed, and the partition's new
   position (the group's committed offset) fetches them again;
3. a task each of whose source partitions has records held or none left to fetch (up to
   the last stable offset under read_committed) gets all its held records handed on,
   its partitions in the order of their first record's timestamp (the table's older
   records before the stream's), and the partitions paused in step 4 resumed;
4. any other task waits: its partitions with records held are paused, so the next
   fetches carry the partitions it waits for.

Tasks with async processors are left out: their records may be held by the async work
already (``_async_work.py``).
"""

from __future__ import annotations

from .._record import ConsumedAt, ConsumedRecord
from ._client import GroupConsumer, TopicPartition
from ._tasks import RuntimeTask

_Batches = dict[TopicPartition, list[ConsumedRecord]]


def _waits(task: RuntimeTask) -> bool:
    return task.running and len(task.sources) > 1 and not task.executor.has_async


class FetchWait:
    def __init__(self, consumer: GroupConsumer) -> None:
        self._consumer = consumer
        self._held: dict[TopicPartition, tuple[RuntimeTask, list[ConsumedRecord]]] = {}
        self._paused: set[TopicPartition] = set()

    def take(self, batches: _Batches, by_partition: dict[TopicPartition, RuntimeTask]) -> _Batches:
        """What to process of ``batches`` and of the records held before, in order
        (module docstring, steps 1 to 4)."""
        out: _Batches = {}
        looked: dict[str, RuntimeTask] = {}
        for tp, records in batches.items():  # step 1
            task = by_partition.get(tp)
            if not records or task is None or not _waits(task):
                out[tp] = records
                continue
            held = self._held.get(tp)
            if held is not None and held[0] is task:
                held[1].extend(records)
            else:
                self._held[tp] = (task, records)
            looked[task.id] = task
        if not self._held:
            return out
        resume: list[TopicPartition] = []
        for tp, (task, _records) in list(self._held.items()):  # step 2
            if by_partition.get(tp) is task and task.running:
                looked[task.id] = task
                continue
            del self._held[tp]
            owner = by_partition.get(tp)
            if tp in self._paused and owner is not None and owner.running:
                resume.append(tp)
        for task in looked.values():
            if all(tp in self._held or self._consumer.unfetched(tp) == 0 for tp in task.sources):
                ready = [tp for tp in task.sources if tp in self._held]  # step 3
                ready.sort(key=lambda tp: self._held[tp][1][0][ConsumedAt.TIMESTAMP])
                for tp in ready:
                    out[tp] = self._held.pop(tp)[1]
                resume += ready
            else:
                waiting = [tp for tp in task.sources if tp in self._held]  # step 4
                self._consumer.pause(waiting)
                self._paused.update(waiting)
        resume = [tp for tp in resume if tp in self._paused]
        if resume:
            self._paused.difference_update(resume)
            assigned = self._consumer.assignment()
            self._consumer.resume([tp for tp in resume if tp in assigned])
        return out

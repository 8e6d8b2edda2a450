"""One topic's table writer: a read_committed consumer, a bounded buffer, Delta commits.

The loop, in a thread of its own:

1. Read the offsets the table's last commit recorded for this topic id
   (``TableCommits``) and assign every partition there; a partition the table has no
   record of starts at its beginning. No consumer group holds the position: the table
   does.
2. Consume (read_committed, so an aborted transaction's records never arrive, and an
   open one's not until it commits) into a buffer of the messages as fetched
   (``Fetched``: rows are made from them column by column at commit). Each consumed
   batch is taken whole: its errors looked for, its bytes counted, in C.
3. Commit when the oldest buffered record has waited ``headrace.table.commit.interval.ms``,
   or earlier when the buffer holds ``max_buffer_bytes`` of keys and values (so memory is
   bounded however far behind the writer is). One Delta commit holds the rows and each
   partition's next offset.
4. On any error (the broker gone, a commit that failed) drop the consumer and the
   buffer and start again at 1 after a pause: what the table recorded is the truth, so
   nothing is lost or doubled. On stop, commit what is buffered first.

``freshness()`` may be read from any thread: how old the newest committed record is,
and how many offsets the table is behind the partitions' ends.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from headrace.base.table_layout import TABLE_APP_ID, incarnation_app_id, table_path

from ._fetched import Fetched
from ._modes import BatchWriter, UnsupportedTableError, batch_writer
from ._rows import partition_columns
from ._settings import TableSettings
from ._table_commit import TableCommits

log = logging.getLogger("headrace.table_topics")

MAX_BUFFER_BYTES = 64 * 1024 * 1024
CONSUME_MAX = 10_000  # messages one consume call returns at most
POLL_S = 0.1  # longest one consume call waits, so stop and the deadline are heard soon
RETRY_S = 2.0  # pause before starting again after an error
FRESHNESS_EVERY_S = 1.0


@dataclass(frozen=True, slots=True)
class Freshness:
    """How far a table is behind its topic.

    ``seconds_behind``: now minus the newest committed record's timestamp (None before
    the writer committed anything). ``offsets_behind``: the partitions' ends (high
    watermarks, as the consumer last saw them) minus the offsets the table covers; an
    upper bound on records, as transaction markers take offsets too.
    """

    seconds_behind: float | None
    offsets_behind: int
    rows_committed: int


class TopicWriter:
    """Keeps the table of ``settings.topic`` under ``location`` up to date until ``stop``."""

    def __init__(
        self,
        settings: TableSettings,
        location: str,
        bootstrap: str,
        *,
        registry_url: str | None = None,
        storage_options: dict[str, str] | None = None,
        max_buffer_bytes: int = MAX_BUFFER_BYTES,
        client_config: dict[str, str] | None = None,
    ) -> None:
        self.settings, self.path = settings, table_path(location, settings.topic)
        path = self.path
        self._bootstrap = bootstrap
        self._client_config = client_config or {}
        self._max_buffer_bytes = max_buffer_bytes
        self._commits = TableCommits(
            path,
            settings.topic,
            app_id=incarnation_app_id(TABLE_APP_ID, settings.topic_id),
            partition_by=partition_columns(settings.partition_by),
            storage_options=storage_options,
        )
        self._location, self._registry_url = location, registry_url
        self._storage_options = storage_options
        self._stopping = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"table-writer-{settings.topic}", daemon=True
        )
        # Read from other threads; each is replaced whole, never changed in place.
        self._committed: dict[int, int] = {}
        self._newest_ms: int | None = None
        self._ends: dict[int, int] = {}
        self._rows = 0

    def start(self) -> TopicWriter:
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def freshness(self) -> Freshness:
        newest, committed, ends = self._newest_ms, self._committed, self._ends
        return Freshness(
            None if newest is None else max(0.0, time.time() - newest / 1000),
            sum(max(0, end - committed.get(p, 0)) for p, end in ends.items()),
            self._rows,
        )

    # ------------------------------------------------------------------ the loop
    def _run(self) -> None:
        try:
            batches = batch_writer(
                self.settings,
                self._commits,
                location=self._location,
                registry_url=self._registry_url,
                storage_options=self._storage_options,
            )
        except UnsupportedTableError as exc:
            log.error("%s", exc)
            return
        while not self._stopping.is_set():
            try:
                self._follow(batches)
            except Exception:
                log.exception("table of topic %s: starting again from the table", self.path)
                self._stopping.wait(RETRY_S)

    def _follow(self, batches: BatchWriter) -> None:
        """Steps 1-3 of the module docstring, until stop (then commit the buffer)."""
        from confluent_kafka import OFFSET_BEGINNING, Consumer
        from confluent_kafka import TopicPartition as KafkaTopicPartition

        topic = self.settings.topic
        committed = self._commits.committed_offsets(self.settings.partitions)
        self._committed = committed
        consumer = Consumer(self._consumer_config())
        try:
            consumer.assign(
                [
                    KafkaTopicPartition(topic, p, committed.get(p, OFFSET_BEGINNING))
                    for p in range(self.settings.partitions)
                ]
            )
            interval = self.settings.commit_interval_ms / 1000
            buffer = Fetched()
            deadline, looked = 0.0, 0.0
            while not self._stopping.is_set():
                wait = POLL_S if not buffer else min(POLL_S, max(0.0, deadline - time.monotonic()))
                # a consumed batch at a time: no Python work per record
                messages = _without_errors(consumer.consume(CONSUME_MAX, wait), topic)
                while messages:
                    if not buffer:
                        deadline = time.monotonic() + interval
                    taken = buffer.take(messages, self._max_buffer_bytes)
                    messages = messages[taken:]
                    if buffer.size >= self._max_buffer_bytes:  # memory is bounded
                        self._commit(batches, buffer)
                        buffer = Fetched()
                now = time.monotonic()
                if buffer and now >= deadline:
                    self._commit(batches, buffer)
                    buffer = Fetched()
                if now - looked >= FRESHNESS_EVERY_S:
                    self._ends = _ends(consumer, topic, self.settings.partitions)
                    looked = now
            if buffer:
                self._commit(batches, buffer)
        finally:
            consumer.close()

    def _commit(self, batches: BatchWriter, fetched: Fetched) -> None:
        ends = fetched.ends()
        started = time.monotonic()
        batches.write(fetched, ends)
        self._committed = {**self._committed, **ends}
        self._newest_ms = fetched.newest_ms()
        self._rows += len(fetched)
        log.debug(
            "table of %s: %d rows committed in %.3f s",
            self.settings.topic,
            len(fetched),
            time.monotonic() - started,
        )

    def _consumer_config(self) -> dict[str, Any]:
        return {
            "bootstrap.servers": self._bootstrap,
            # required by the client, never joined: positions are assigned from the table
            "group.id": "headrace-table-writer",
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "isolation.level": "read_committed",
            # a partition the table has no record of, or whose recorded offset retention
            # deleted, is read from its first record
            "auto.offset.reset": "earliest",
            # librdkafka's default (1 s) idles a reader that drains its queue quickly
            "fetch.queue.backoff.ms": 10,
            "fetch.wait.max.ms": 100,
            # what librdkafka fetches ahead, beside the buffer: both bounded
            "queued.max.messages.kbytes": 16 * 1024,
            "log_level": 3,
            **self._client_config,
        }


def _without_errors(messages: list[Any], topic: str) -> list[Any]:
    """The consumed ``messages`` that are records, in order; raises on a fatal error.

    Errors are rare, so the whole list is looked at once, in C (``Message.error`` mapped
    over it), and only a list that holds one is walked message by message.
    """
    from confluent_kafka import KafkaException, Message

    if not any(map(Message.error, messages)):  # an error is an object: true; None is not
        return messages
    records = []
    for message in messages:
        error = message.error()
        if error is None:
            records.append(message)
        elif error.fatal():
            raise KafkaException(error)
        else:  # librdkafka retries the rest itself (a broker away for a while)
            log.debug("table of %s: %s", topic, error)
    return records


def _ends(consumer: Any, topic: str, partitions: int) -> dict[int, int]:
    from confluent_kafka import TopicPartition as KafkaTopicPartition

    ends = {}
    for p in range(partitions):
        _low, high = consumer.get_watermark_offsets(KafkaTopicPartition(topic, p), cached=True)
        if high >= 0:
            ends[p] = high
    return ends

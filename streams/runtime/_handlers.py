"""What happens to a record that fails in processing or in production.

Each kind of error has its own configured action:

- ``fail``: the instance stops cleanly and says why (the default);
- ``continue``: log the record's position and the error, then go on without it;
- ``dead_letter``: send the record to the dead-letter topic with the error in headers
  (the same header names as dead letters of deserialization), then go on.

Deserialization errors keep the handlers of :mod:`streams` (they run inside the task's
decoder); :func:`deserialization_handler` maps the same three words onto them.

Every record a handler lets go is counted (``_metrics.py``): dead letters in
``records_dead_lettered_total``, skipped records in ``records_skipped_total``, labelled
with the record's topic and the kind of error as ``reason``. A consumed record is
counted once however often it is handled: a batch that fails in processing is run
again record by record (``ProcessingLoop._replay``), and its records are decoded, and handed to
the handlers, a second time; under exactly-once an aborted transaction replays them
too. Offsets rise within a partition, so a record at or below the highest offset
counted for its partition has been counted already.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Sequence

from .._deserialization import (
    HEADER_EXCEPTION,
    HEADER_MESSAGE,
    HEADER_OFFSET,
    HEADER_PARTITION,
    HEADER_STACKTRACE,
    HEADER_TOPIC,
    DeadLetterQueueHandler,
    DeserializationAction,
    DeserializationHandler,
    DeserializationResponse,
    LogAndContinueHandler,
    LogAndFailHandler,
)
from .._record import ConsumedAt, ConsumedRecord, Headers, ProducedRecord
from ._metrics import AppMetrics
from ._settings import ErrorAction

log = logging.getLogger("headrace.streams.runtime.errors")


def deserialization_handler(
    action: ErrorAction, dead_letters: str, metrics: AppMetrics | None = None
) -> DeserializationHandler:
    if action == "continue":
        handler: DeserializationHandler = LogAndContinueHandler()
    elif action == "dead_letter":
        handler = DeadLetterQueueHandler(dead_letters)
    else:
        return LogAndFailHandler()
    return handler if metrics is None else CountingDeserializationHandler(handler, metrics)


class _Counted:
    """The highest offset counted per partition: says whether a record is new."""

    def __init__(self) -> None:
        self._highest: dict[tuple[str, int], int] = {}

    def first_time(self, topic: str, partition: int, offset: int) -> bool:
        tp = (topic, partition)
        if offset <= self._highest.get(tp, -1):
            return False
        self._highest[tp] = offset
        return True


class CountingDeserializationHandler:
    """Counts what ``inner`` lets go: a record it continues past with dead letters was
    dead-lettered, without them skipped. A failing record is not counted: it stops the
    task, and is read again after a restart."""

    def __init__(self, inner: DeserializationHandler, metrics: AppMetrics) -> None:
        self.inner = inner
        self._metrics = metrics
        self._counted = _Counted()

    def handle(self, record: ConsumedRecord, error: Exception) -> DeserializationResponse:
        response = self.inner.handle(record, error)
        if response.action is DeserializationAction.CONTINUE and self._counted.first_time(
            record[ConsumedAt.TOPIC], record[ConsumedAt.PARTITION], record[ConsumedAt.OFFSET]
        ):
            metrics = self._metrics
            if response.dead_letters:
                counter, action = metrics.records_dead_lettered, "dead_letter"
            else:
                counter, action = metrics.records_skipped, "continue"
            counter.labels(record[ConsumedAt.TOPIC], "deserialization").inc()
            metrics.errors.labels("deserialization", action).inc()
        return response


def error_headers(error: BaseException, topic: str, partition: int, offset: int) -> Headers:
    name = f"{type(error).__module__}.{type(error).__qualname__}"
    cause = error.__cause__ or error
    return (
        (HEADER_EXCEPTION, name.encode()),
        (HEADER_MESSAGE, str(cause).encode()),
        (HEADER_STACKTRACE, "".join(traceback.format_exception(cause)).encode()),
        (HEADER_TOPIC, topic.encode()),
        (HEADER_PARTITION, str(partition).encode()),
        (HEADER_OFFSET, str(offset).encode()),
    )


class ErrorHandler:
    """One configured action for one kind of error (``processing`` or ``production``)."""

    def __init__(
        self, kind: str, action: ErrorAction, dead_letters: str, metrics: AppMetrics
    ) -> None:
        self.kind = kind
        self.action = action
        self.dead_letters = dead_letters
        self._metrics = metrics
        self._counted = _Counted()

    @property
    def fails(self) -> bool:
        return self.action == "fail"

    def consumed(self, record: ConsumedRecord, error: BaseException) -> list[ProducedRecord]:
        """A consumed record failed; return dead letters to send (raise nothing)."""
        topic, partition, offset, timestamp, key, value, headers = record
        where = f"{topic}-{partition} offset {offset}"
        first = self._counted.first_time(topic, partition, offset)
        if first:
            self._metrics.errors.labels(self.kind, self.action).inc()
        if self.action == "dead_letter":
            if first:
                self._metrics.records_dead_lettered.labels(topic, self.kind).inc()
            log.warning(
                "%s error at %s: %r; sent to %s", self.kind, where, error, self.dead_letters
            )
            return [
                (
                    self.dead_letters,
                    key,
                    value,
                    timestamp,
                    (*headers, *error_headers(error, topic, partition, offset)),
                    None,
                )
            ]
        if first:
            self._metrics.records_skipped.labels(topic, self.kind).inc()
        log.warning("%s error at %s: %r; skipping the record", self.kind, where, error)
        return []

    def produced(
        self, topic: str, partition: int, records: Sequence[ProducedRecord], error: BaseException
    ) -> list[ProducedRecord]:
        """Records were refused by the broker; return dead letters to send."""
        self._metrics.errors.labels(self.kind, self.action).inc(len(records))
        if self.action == "dead_letter" and topic != self.dead_letters:
            self._metrics.records_dead_lettered.labels(topic, self.kind).inc(len(records))
            log.warning(
                "%d records for %s-%d failed: %r; sent to %s",
                len(records),
                topic,
                partition,
                error,
                self.dead_letters,
            )
            return [
                (
                    self.dead_letters,
                    key,
                    value,
                    ts,
                    (*headers, *error_headers(error, topic, partition, -1)),
                    None,
                )
                for _t, key, value, ts, headers, _p in records
            ]
        self._metrics.records_skipped.labels(topic, self.kind).inc(len(records))
        log.warning(
            "%d records for %s-%d failed: %r; dropped", len(records), topic, partition, error
        )
        return []

"""What happens to a consumed record whose key or value cannot be deserialized.

A handler is asked once per bad record and answers with a
:class:`DeserializationResponse`: fail the task, or continue past the record, possibly
sending its raw bytes to a dead-letter topic. A bad record never silently disappears: every
handler logs it, and the dead-letter handler keeps its bytes.

Dead letters carry the original key, value, timestamp and headers, plus headers naming
the failure, spelled as Kafka Streams spells them (KIP-1034) so tools built for Java
dead-letter queues read them too.
"""

from __future__ import annotations

import enum
import logging
import traceback
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from ._record import ConsumedRecord, ProducedRecord, consumed_position

log = logging.getLogger("headrace.streams.deserialization")

HEADER_EXCEPTION = "__streams.errors.exception"
HEADER_MESSAGE = "__streams.errors.message"
HEADER_STACKTRACE = "__streams.errors.stacktrace"
HEADER_TOPIC = "__streams.errors.topic"
HEADER_PARTITION = "__streams.errors.partition"
HEADER_OFFSET = "__streams.errors.offset"


class DeserializationAction(enum.Enum):
    CONTINUE = "continue"
    FAIL = "fail"


@dataclass(frozen=True)
class DeserializationResponse:
    action: DeserializationAction
    dead_letters: tuple[ProducedRecord, ...] = ()


@runtime_checkable
class DeserializationHandler(Protocol):
    def handle(self, record: ConsumedRecord, error: Exception) -> DeserializationResponse: ...


def _where(record: ConsumedRecord) -> str:
    return consumed_position(record)


class LogAndFailHandler:
    """The default: log the record's position and the error, then stop the task."""

    def handle(self, record: ConsumedRecord, error: Exception) -> DeserializationResponse:
        log.error("cannot deserialize %s: %r; failing", _where(record), error)
        return DeserializationResponse(DeserializationAction.FAIL)


class LogAndContinueHandler:
    """Log the record's position and the error, then skip the record."""

    def handle(self, record: ConsumedRecord, error: Exception) -> DeserializationResponse:
        log.warning("cannot deserialize %s: %r; skipping it", _where(record), error)
        return DeserializationResponse(DeserializationAction.CONTINUE)


class DeadLetterQueueHandler:
    """Send the record's raw bytes to ``topic`` with error headers, then continue."""

    def __init__(self, topic: str) -> None:
        self.topic = topic

    def handle(self, record: ConsumedRecord, error: Exception) -> DeserializationResponse:
        topic, partition, offset, timestamp, key, value, headers = record
        log.warning(
            "cannot deserialize %s: %r; sending it to %s", _where(record), error, self.topic
        )
        trace = "".join(traceback.format_exception(error))
        error_headers = (
            (HEADER_EXCEPTION, f"{type(error).__module__}.{type(error).__qualname__}".encode()),
            (HEADER_MESSAGE, str(error).encode()),
            (HEADER_STACKTRACE, trace.encode()),
            (HEADER_TOPIC, topic.encode()),
            (HEADER_PARTITION, str(partition).encode()),
            (HEADER_OFFSET, str(offset).encode()),
        )
        letter: ProducedRecord = (
            self.topic,
            key,
            value,
            timestamp,
            (*headers, *error_headers),
            None,
        )
        return DeserializationResponse(DeserializationAction.CONTINUE, (letter,))

"""Errors raised by the broker's storage layer.

Every error carries ``retriable`` (may the client simply try again?) and
``error_code`` (the Kafka protocol error code a handler puts in its response), so a
handler translates any of them without a lookup table of its own.

StorageError                      root; never raised itself
+-- OffsetOutOfRangeError         read outside [log_start, log_end]   (1)
+-- LogClosedError                the log was closed or deleted       (6, retriable)
+-- KafkaStorageError             the disk failed under us            (56, retriable)
+-- InvalidConfigError            unknown topic config or bad value   (40)
+-- TopicError                    topic administration
    +-- TopicExistsError          create of a name already in use     (36)
    +-- UnknownTopicError         no topic by that name               (3, retriable)
    +-- InvalidTopicError         name not allowed                    (17)
    +-- InvalidPartitionsError    partition count not allowed         (37)

The errors of record batches (``RecordError`` and its kinds) belong to the layer below,
``log_broker.records``; storage raises them too, for bytes on disk, and re-exports them.
"""

from __future__ import annotations


class StorageError(Exception):
    """Root of every error the storage layer raises."""

    retriable: bool = False
    error_code: int = -1  # UNKNOWN_SERVER_ERROR


class OffsetOutOfRangeError(StorageError):
    error_code = 1

    def __init__(self, offset: int, log_start_offset: int, log_end_offset: int) -> None:
        super().__init__(f"offset {offset} is outside [{log_start_offset}, {log_end_offset}]")
        self.offset = offset
        self.log_start_offset = log_start_offset
        self.log_end_offset = log_end_offset


class LogClosedError(StorageError):
    # NOT_LEADER_OR_FOLLOWER: the client refreshes metadata and learns what happened.
    retriable = True
    error_code = 6


class KafkaStorageError(StorageError):
    retriable = True
    error_code = 56


class InvalidConfigError(StorageError):
    error_code = 40


class TopicError(StorageError):
    """Topic administration was refused."""


class TopicExistsError(TopicError):
    error_code = 36


class UnknownTopicError(TopicError):
    retriable = True
    error_code = 3  # UNKNOWN_TOPIC_OR_PARTITION


class InvalidTopicError(TopicError):
    error_code = 17


class InvalidPartitionsError(TopicError):
    error_code = 37

"""Errors of record batches: a produce payload, or bytes read back, that are not
acceptable as Kafka records.

    BrokerError (headrace.base's)    ``retriable`` and the Kafka ``error_code`` a handler answers
    +-- RecordError                  a batch is not acceptable; nothing of it was appended
        +-- CorruptRecordError       bad CRC, truncated batch            (2, retriable)
        +-- InvalidRecordError       wrong magic, bad structure          (87)
        +-- RecordTooLargeError      batch above max.message.bytes       (10)

Storage raises them too (corrupt bytes on disk) and re-exports them; its own errors
(``log_broker.storage.StorageError``) share the root, so a handler translates either kind
by ``error_code`` alone.
"""

from __future__ import annotations

from headrace.base import BrokerError


class RecordError(BrokerError):
    """A produce payload was refused; nothing of it was appended."""


class CorruptRecordError(RecordError):
    # Kafka treats corruption as transient: the bytes may have been damaged in transit.
    retriable = True
    error_code = 2


class InvalidRecordError(RecordError):
    error_code = 87


class RecordTooLargeError(RecordError):
    error_code = 10  # MESSAGE_TOO_LARGE

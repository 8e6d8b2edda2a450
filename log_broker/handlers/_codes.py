"""Kafka error codes for the storage and record errors handlers meet."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

from .. import storage

_BY_TYPE: tuple[tuple[type[Exception], ErrorCode], ...] = (
    (storage.CorruptRecordError, ErrorCode.corrupt_message),
    (storage.RecordTooLargeError, ErrorCode.message_too_large),
    (storage.InvalidRecordError, ErrorCode.invalid_record),
    (storage.OffsetOutOfRangeError, ErrorCode.offset_out_of_range),
    (storage.TopicExistsError, ErrorCode.topic_already_exists),
    (storage.InvalidTopicError, ErrorCode.invalid_topic_exception),
    (storage.InvalidPartitionsError, ErrorCode.invalid_partitions),
    (storage.InvalidConfigError, ErrorCode.invalid_config),
)


def error_code_for(exc: Exception) -> ErrorCode:
    for exc_type, code in _BY_TYPE:
        if isinstance(exc, exc_type):
            return code
    # Every storage or record error names its own code (KAFKA_STORAGE_ERROR for a failing disk).
    if isinstance(exc, storage.StorageError | storage.RecordError) and exc.error_code != -1:
        return ErrorCode(exc.error_code)
    return ErrorCode.unknown_server_error

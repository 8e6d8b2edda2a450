from __future__ import annotations

import headrace.log_broker.storage as storage
from headrace.log_broker.storage import _errors


def test_public_surface_is_pinned() -> None:
    assert sorted(storage.__all__) == sorted(
        [
            "CONFIG_DEFS",
            "AppendResult",
            "ConfigDef",
            "ConfigEntry",
            "ConfigType",
            "CorruptRecordError",
            "GroupSyncer",
            "InvalidConfigError",
            "InvalidPartitionsError",
            "InvalidRecordError",
            "InvalidTopicError",
            "KafkaStorageError",
            "LocatedBytes",
            "LogClosedError",
            "LogManager",
            "LogState",
            "OffsetOutOfRangeError",
            "PartitionLog",
            "RecordError",
            "RecordTooLargeError",
            "StorageError",
            "Topic",
            "TopicConfig",
            "TopicError",
            "TopicExistsError",
            "UnknownTopicError",
            "describe_configs",
            "effective_configs",
            "validate_new_topic",
            "validate_topic_name",
        ]
    )
    for name in storage.__all__:
        assert getattr(storage, name) is not None


def test_every_error_descends_from_the_root_and_carries_codes() -> None:
    errors = [
        value
        for value in vars(_errors).values()
        if isinstance(value, type) and issubclass(value, Exception)
    ]
    assert len(errors) == 10
    for error in errors:
        assert getattr(storage, error.__name__) is error
        assert issubclass(error, storage.StorageError)
        assert isinstance(error.retriable, bool)
        assert isinstance(error.error_code, int)
        assert error.__name__ in (_errors.__doc__ or "")

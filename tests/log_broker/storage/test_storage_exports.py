from __future__ import annotations

import subprocess
import sys

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
    assert len(errors) == 14
    for error in errors:
        assert getattr(storage, error.__name__) is error
        assert issubclass(error, storage.StorageError)
        assert isinstance(error.retriable, bool)
        assert isinstance(error.error_code, int)
        assert error.__name__ in (_errors.__doc__ or "")


def test_records_and_storage_import_in_either_order() -> None:
    # _records raises storage's errors and storage uses _records: no import cycle.
    for first, second in (
        ("headrace.log_broker._records", "headrace.log_broker.storage"),
        ("headrace.log_broker.storage", "headrace.log_broker._records"),
    ):
        code = f"import {first}, {second}; {second}.__name__"
        subprocess.run([sys.executable, "-c", code], check=True)

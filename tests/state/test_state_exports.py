from __future__ import annotations

from headrace import state


def test_public_surface_is_pinned() -> None:
    assert sorted(state.__all__) == sorted(
        [
            "CHECKPOINT_FILE",
            "PUT_RETURN_CODE_NOT_PUT",
            "PUT_RETURN_CODE_VALID_TO_UNDEFINED",
            "ChangeLoggingVersionedStore",
            "InMemoryVersionedStore",
            "RocksDBVersionedStore",
            "VersionedBytesStore",
            "VersionedKeyValueStore",
            "VersionedKeyValueStoreBuilder",
            "VersionedRecord",
            "DEFAULT_MAX_ENTRIES",
            "BytesSerde",
            "CacheEntry",
            "CachingKeyValueStore",
            "CachingSegmentedStore",
            "Change",
            "ChangeLoggingKeyValueStore",
            "ChangeLoggingSegmentedStore",
            "ChangeRecord",
            "CheckpointError",
            "CheckpointUnsupportedError",
            "CheckpointableStore",
            "FlushListener",
            "InMemoryKeyValueStore",
            "InMemorySessionStore",
            "InMemoryWindowStore",
            "InvalidStoreStateError",
            "KeyValueBytesStore",
            "KeyValueStore",
            "KeyValueStoreBuilder",
            "MeteredKeyValueStore",
            "MeteredSegmentedStore",
            "OpStats",
            "RocksDBKeyValueStore",
            "RocksDBMemory",
            "RocksDBSessionStore",
            "RocksDBWindowStore",
            "SegmentedBytesStore",
            "SegmentedSessionStore",
            "SegmentedStore",
            "SegmentedWindowStore",
            "SerializationError",
            "Serde",
            "SessionBytesStore",
            "SessionKeySchema",
            "SessionStore",
            "SessionStoreBuilder",
            "StateStore",
            "StateStoreContext",
            "StateStoreError",
            "StoreBuilder",
            "StoreConfigError",
            "StoreIOError",
            "StoreLockedError",
            "StoreMetrics",
            "StoreState",
            "StoreTestContext",
            "TaskCheckpoint",
            "TimestampedKeyValueStore",
            "TimestampedWindowStore",
            "ValueAndTimestamp",
            "Window",
            "WindowBytesStore",
            "WindowKeySchema",
            "WindowStore",
            "WindowStoreBuilder",
            "Windowed",
            "rocksdb_memory",
        ]
    )
    for name in state.__all__:
        assert getattr(state, name) is not None


def test_every_error_descends_from_the_root_and_says_if_retriable() -> None:
    errors = [
        state.StoreLockedError,
        state.InvalidStoreStateError,
        state.StoreIOError,
        state.StoreConfigError,
        state.SerializationError,
        state.CheckpointError,
        state.CheckpointUnsupportedError,
    ]
    for error in errors:
        assert issubclass(error, state.StateStoreError)
        assert isinstance(error("x").retriable, bool)
    assert state.StoreLockedError("x").retriable is True
    assert state.StoreIOError("x", retriable=True).retriable is True

"""State stores: key-value, window and session; RocksDB and in-memory backends.

Bytes-level stores sit behind small Protocols; changelogging, caching and metrics
wrap them; typed facades add serdes; ``Stores`` builds the stacks the processor
API asks for.
"""

from ._builders import KeyValueStoreBuilder as KeyValueStoreBuilder
from ._builders import SessionStoreBuilder as SessionStoreBuilder
from ._builders import Stores as Stores
from ._builders import WindowStoreBuilder as WindowStoreBuilder
from ._cache import DEFAULT_MAX_ENTRIES as DEFAULT_MAX_ENTRIES
from ._caching import CachingKeyValueStore as CachingKeyValueStore
from ._caching import CachingSegmentedStore as CachingSegmentedStore
from ._checkpoint import CHECKPOINT_FILE as CHECKPOINT_FILE
from ._checkpoint import TaskCheckpoint as TaskCheckpoint
from ._errors import CheckpointError as CheckpointError
from ._errors import CheckpointUnsupportedError as CheckpointUnsupportedError
from ._errors import InvalidStoreStateError as InvalidStoreStateError
from ._errors import SerializationError as SerializationError
from ._errors import StateStoreError as StateStoreError
from ._errors import StoreConfigError as StoreConfigError
from ._errors import StoreIOError as StoreIOError
from ._errors import StoreLockedError as StoreLockedError
from ._key_schema import SessionKeySchema as SessionKeySchema
from ._key_schema import WindowKeySchema as WindowKeySchema
from ._kv import InMemoryKeyValueStore as InMemoryKeyValueStore
from ._kv import RocksDBKeyValueStore as RocksDBKeyValueStore
from ._lifecycle import StoreState as StoreState
from ._logging import ChangeLoggingKeyValueStore as ChangeLoggingKeyValueStore
from ._logging import ChangeLoggingSegmentedStore as ChangeLoggingSegmentedStore
from ._metered import MeteredKeyValueStore as MeteredKeyValueStore
from ._metered import MeteredSegmentedStore as MeteredSegmentedStore
from ._metered import OpStats as OpStats
from ._metered import StoreMetrics as StoreMetrics
from ._protocols import CacheEntry as CacheEntry
from ._protocols import ChangeRecord as ChangeRecord
from ._protocols import CheckpointableStore as CheckpointableStore
from ._protocols import FlushListener as FlushListener
from ._protocols import KeyValueBytesStore as KeyValueBytesStore
from ._protocols import Serde as Serde
from ._protocols import StateStore as StateStore
from ._protocols import StateStoreContext as StateStoreContext
from ._protocols import StoreBuilder as StoreBuilder
from ._rocksdb_memory import RocksDBMemory as RocksDBMemory
from ._rocksdb_memory import rocksdb_memory as rocksdb_memory
from ._segmented import SegmentedBytesStore as SegmentedBytesStore
from ._segmented import SegmentedStore as SegmentedStore
from ._session import InMemorySessionStore as InMemorySessionStore
from ._session import RocksDBSessionStore as RocksDBSessionStore
from ._session import SegmentedSessionStore as SegmentedSessionStore
from ._session import SessionBytesStore as SessionBytesStore
from ._testing import StoreTestContext as StoreTestContext
from ._timestamped import ValueAndTimestamp as ValueAndTimestamp
from ._typed import BytesSerde as BytesSerde
from ._typed import Change as Change
from ._typed import KeyValueStore as KeyValueStore
from ._typed import SessionStore as SessionStore
from ._typed import TimestampedKeyValueStore as TimestampedKeyValueStore
from ._typed import TimestampedWindowStore as TimestampedWindowStore
from ._typed import WindowStore as WindowStore
from ._versioned import PUT_RETURN_CODE_NOT_PUT as PUT_RETURN_CODE_NOT_PUT
from ._versioned import PUT_RETURN_CODE_VALID_TO_UNDEFINED as PUT_RETURN_CODE_VALID_TO_UNDEFINED
from ._versioned import InMemoryVersionedStore as InMemoryVersionedStore
from ._versioned import RocksDBVersionedStore as RocksDBVersionedStore
from ._versioned import VersionedBytesStore as VersionedBytesStore
from ._versioned_stack import ChangeLoggingVersionedStore as ChangeLoggingVersionedStore
from ._versioned_stack import VersionedKeyValueStore as VersionedKeyValueStore
from ._versioned_stack import VersionedKeyValueStoreBuilder as VersionedKeyValueStoreBuilder
from ._versioned_stack import VersionedRecord as VersionedRecord
from ._window import InMemoryWindowStore as InMemoryWindowStore
from ._window import RocksDBWindowStore as RocksDBWindowStore
from ._window import SegmentedWindowStore as SegmentedWindowStore
from ._window import WindowBytesStore as WindowBytesStore
from ._windowed import Window as Window
from ._windowed import Windowed as Windowed

__all__ = [
    "CHECKPOINT_FILE",
    "DEFAULT_MAX_ENTRIES",
    "PUT_RETURN_CODE_NOT_PUT",
    "PUT_RETURN_CODE_VALID_TO_UNDEFINED",
    "BytesSerde",
    "CacheEntry",
    "CachingKeyValueStore",
    "CachingSegmentedStore",
    "Change",
    "ChangeLoggingKeyValueStore",
    "ChangeLoggingSegmentedStore",
    "ChangeLoggingVersionedStore",
    "ChangeRecord",
    "CheckpointError",
    "CheckpointUnsupportedError",
    "CheckpointableStore",
    "FlushListener",
    "InMemoryKeyValueStore",
    "InMemorySessionStore",
    "InMemoryVersionedStore",
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
    "RocksDBVersionedStore",
    "RocksDBWindowStore",
    "SegmentedBytesStore",
    "SegmentedSessionStore",
    "SegmentedStore",
    "SegmentedWindowStore",
    "Serde",
    "SerializationError",
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
    "VersionedBytesStore",
    "VersionedKeyValueStore",
    "VersionedKeyValueStoreBuilder",
    "VersionedRecord",
    "Window",
    "WindowBytesStore",
    "WindowKeySchema",
    "WindowStore",
    "WindowStoreBuilder",
    "Windowed",
    "rocksdb_memory",
]

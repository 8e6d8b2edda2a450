"""The one exception root of the streams package.

Every error raised by the processor API, the topology builder, the task executor and the
test driver derives from :class:`StreamsError`::

    StreamsError
    ├── ConfigError                   a setting is unknown or has an unusable value
    ├── TopologyError                 the topology is malformed (unknown parent, name taken, ...)
    ├── IllegalStateTransition        a lifecycle was asked to make a move its table forbids
    ├── ProcessingError               user code (a processor, a predicate, a serde) raised
    ├── RecordDeserializationError    a consumed record could not be deserialized and the
    │                                 handler said fail
    ├── StoreAccessError              a store is unknown, not connected, or of another kind
    │                                 (also headrace.state's StateStoreError)
    └── NoOutputRecordError           a test output topic was read while empty (also a
                                      LookupError, so ``except LookupError`` works)

``retriable`` says whether retrying the same operation may succeed; nothing here is
retriable today, because every one of these is a fault in the program or its data, not a
passing condition of the network.
"""

from __future__ import annotations

from headrace.base import IllegalTransitionError
from headrace.state import StateStoreError as StateStoreError


class StreamsError(Exception):
    """Root of every error raised by the streams package."""

    retriable: bool = False


class ConfigError(StreamsError):
    """A setting is unknown or has an unusable value."""


class TopologyError(StreamsError):
    """The topology cannot be built or instantiated as described."""


class IllegalStateTransition(StreamsError, IllegalTransitionError):
    """A lifecycle was asked for a transition its table does not allow (also a
    :class:`headrace.base.IllegalTransitionError`, as every lifecycle's error is)."""


class ProcessingError(StreamsError):
    """User code raised while a node processed a batch; the original is ``__cause__``."""

    def __init__(self, message: str, *, node: str, topic: str | None, partition: int) -> None:
        super().__init__(message)
        self.node = node
        self.topic = topic
        self.partition = partition


class RecordDeserializationError(StreamsError):
    """A consumed record failed to deserialize and the handler chose to fail."""

    def __init__(self, message: str, *, topic: str, partition: int, offset: int) -> None:
        super().__init__(message)
        self.topic = topic
        self.partition = partition
        self.offset = offset


class StoreAccessError(StreamsError, StateStoreError):
    """A state store is unknown, not connected to the asking processor, or of another kind.

    ``StateStoreError`` here is ``headrace.state``'s, the root of store errors, so
    ``except StateStoreError`` catches this and every store failure alike.
    """


class NoOutputRecordError(StreamsError, LookupError):
    """A test output topic was read while it held no record."""

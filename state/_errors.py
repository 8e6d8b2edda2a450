"""Errors raised by state stores.

Every error carries ``retriable``: whether trying the same operation again later
(after a rebalance, or once another process lets go of a directory) can succeed.
Errors from RocksDB and from serdes are translated where they enter this package.

    StateStoreError
    ├── StoreLockedError         another live process holds the store directory
    ├── InvalidStoreStateError   store used before init() or after close()
    ├── StoreIOError             the storage engine failed to read or write
    ├── StoreConfigError         a store or builder was given impossible settings
    ├── SerializationError       a key or value serde raised
    ├── CheckpointError          a task checkpoint file cannot be read
    └── CheckpointUnsupportedError  the store cannot be checkpointed (it lives in memory)
"""

from __future__ import annotations

from headrace.base import IllegalTransitionError


class StateStoreError(Exception):
    """Root of every error raised by ``state``."""

    retriable: bool = False

    def __init__(self, message: str, *, retriable: bool | None = None) -> None:
        super().__init__(message)
        if retriable is not None:
            self.retriable = retriable


class StoreLockedError(StateStoreError):
    """The store directory is locked by another live process (or another open store).

    Retriable: during a rebalance the previous owner usually lets go shortly.
    """

    retriable = True


class InvalidStoreStateError(StateStoreError, IllegalTransitionError):
    """An operation was attempted on a store that is not open (a store's lifecycle
    error, so also a :class:`headrace.base.IllegalTransitionError`)."""


class StoreIOError(StateStoreError):
    """The storage engine reported a failure."""


class StoreConfigError(StateStoreError, ValueError):
    """Settings that cannot work, such as a retention shorter than the window size."""


class SerializationError(StateStoreError):
    """A serde failed to turn an object into bytes or back."""


class CheckpointError(StateStoreError):
    """A checkpoint file exists but cannot be parsed."""


class CheckpointUnsupportedError(StateStoreError):
    """``checkpoint()`` was called on a store that has nothing on disk to capture.

    Ask ``supports_checkpoint`` first; an in-memory store always answers False.
    """

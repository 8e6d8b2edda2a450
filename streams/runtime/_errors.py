"""Errors of the runtime; all of them are :class:`streams.StreamsError` too.

The runtime is part of the streams package, so its errors hang under the package's one
root::

    StreamsError
    └── RuntimeFailure               the running application cannot go on as it is
        ├── SettingsError            a setting is missing, unknown or out of range
        ├── CoPartitionError         sources that must be co-partitioned are not
        ├── ClientError              the Kafka client failed (retriable when the
        │   │                        underlying error is)
        │   └── SourceTopicDeletedError
        │                            a source topic was deleted while the application
        │                            ran; not retriable (it is never re-created)
        ├── ProductionError          a record could not be produced and the handler
        │                            said fail
        ├── RestoreError             a store could not be restored from its changelog
        ├── TransactionAbortedError  an exactly-once transaction failed and was aborted;
        │                            retriable: the tasks rewind to committed offsets
        │                            (also headrace.base's TransactionError)
        ├── FencedError              a newer instance with the same transactional id (or
        │                            a newer group generation) took over; not retriable
        ├── UnsupportedClientError   the Kafka client library cannot give what a
        │                            correctness guard needs (``_aiokafka_internals.py``)
        └── AppStopped               the application stopped because of an error;
                                     ``__cause__`` says which

Third-party errors (aiokafka's) are translated into :class:`ClientError` where they enter,
in the client module, and keep their own ``retriable`` flag.
"""

from __future__ import annotations

from headrace.base import TransactionError as TransactionError

from .._errors import StreamsError


class RuntimeFailure(StreamsError):
    """Root of the runtime's errors."""


class SettingsError(RuntimeFailure):
    """A setting is missing, unknown or out of range."""


class CoPartitionError(RuntimeFailure):
    """Source topics of one sub-topology have different partition counts."""


class ClientError(RuntimeFailure):
    """The Kafka client failed; ``retriable`` mirrors the underlying error."""

    def __init__(self, message: str, *, retriable: bool = False) -> None:
        super().__init__(message)
        self.retriable = retriable


class SourceTopicDeletedError(ClientError):
    """A source topic was deleted while the application ran. The application never
    re-creates it (its offsets and data are gone), so it stops."""


class ProductionError(RuntimeFailure):
    """Records could not be produced and the production handler said fail."""

    def __init__(self, message: str, *, topic: str, partition: int) -> None:
        super().__init__(message)
        self.topic = topic
        self.partition = partition


class RestoreError(RuntimeFailure):
    """A store could not be restored from its changelog."""


class TransactionAbortedError(RuntimeFailure, TransactionError):
    """An exactly-once transaction failed; it is aborted and its tasks rewound.

    ``TransactionError`` is the one class of that name (headrace.base's), so ``except
    TransactionError`` and ``except RuntimeFailure`` both catch this.
    """

    retriable = True


class FencedError(RuntimeFailure):
    """This instance was replaced: its producer was fenced or it left the group."""


class UnsupportedClientError(RuntimeFailure):
    """The Kafka client library (a version the runtime was not written for) cannot give
    what a correctness guard needs; the guard refuses instead of passing silently."""


class AppStopped(RuntimeFailure):
    """The application stopped because of an error; ``__cause__`` holds it."""

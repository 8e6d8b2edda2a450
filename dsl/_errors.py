"""The one exception root of the dsl package::

    DslError
    ├── SerdeError
    │   ├── SerializerError         an object could not be turned into bytes (also
    │   │                           headrace.state's SerializationError)
    │   └── DeserializationError    bytes could not be turned back into an object
    └── TopologyBuildError          the DSL program cannot become a topology
                                    (a name used twice, streams of two builders, ...)

``retriable`` is False throughout: bad data and bad programs do not heal on retry.
"""

from __future__ import annotations

from headrace.state import SerializationError as SerializationError


class DslError(Exception):
    """Root of every error raised by the dsl package."""

    retriable: bool = False


class SerdeError(DslError):
    """A serde could not convert a value."""


class SerializerError(SerdeError, SerializationError):
    """An object could not be serialized.

    ``SerializationError`` is the one class of that name (headrace.state's, which a store
    raises when a serde fails), so ``except SerializationError`` and ``except SerdeError``
    both catch this.
    """


class DeserializationError(SerdeError):
    """Bytes could not be deserialized."""


class TopologyBuildError(DslError):
    """The DSL program cannot be turned into a topology."""

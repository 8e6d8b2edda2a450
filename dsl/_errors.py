"""The one exception root of the dsl package::

    DslError
    ├── SerdeError
    │   ├── SerializationError      an object could not be turned into bytes
    │   └── DeserializationError    bytes could not be turned back into an object
    └── TopologyBuildError          the DSL program cannot become a topology
                                    (a name used twice, streams of two builders, ...)

``retriable`` is False throughout: bad data and bad programs do not heal on retry.
"""

from __future__ import annotations


class DslError(Exception):
    """Root of every error raised by the dsl package."""

    retriable: bool = False


class SerdeError(DslError):
    """A serde could not convert a value."""


class SerializationError(SerdeError):
    """An object could not be serialized."""


class DeserializationError(SerdeError):
    """Bytes could not be deserialized."""


class TopologyBuildError(DslError):
    """The DSL program cannot be turned into a topology."""

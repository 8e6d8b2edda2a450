"""What the DSL's signatures ask of a serde, as Protocols, so more than ``Serde`` fits.

A source needs only to read (:class:`Reads`: its ``deserialize`` fixes the stream's key or
value type); a sink only to write (:class:`Writes`). ``Serde[T]``, the windowed serdes and
the schema registry's serdes all do both. Writing is contravariant: a ``Serde[str]`` also
writes the ``None`` of a ``str | None`` key, since every serde maps ``None`` to ``None``.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

T_co = TypeVar("T_co", covariant=True)
T_contra = TypeVar("T_contra", contravariant=True)


class Reads(Protocol[T_co]):
    def deserialize(self, topic: str, data: bytes | None, /) -> T_co | None: ...


class Writes(Protocol[T_contra]):
    def serialize(self, topic: str, obj: T_contra | None, /) -> bytes | None: ...

"""Change: what one KTable node tells the next about one key.

A table update travels as a record whose value is ``Change(new, old)``: the value the
key has now and, when a downstream node asked for it, the value it had before (Kafka
Streams' internal ``Change``). ``new`` of ``None`` is a delete. Operators that must undo
a previous contribution (a table re-grouped by another key, a table-table join) need
``old``; every other node leaves it ``None`` and saves the read.

Across a repartition topic a change is split into a subtract record (old only) and an
add record (new only); :class:`ChangeSerde` writes either as one flag byte and the
inner value's bytes.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ._binding import Decode, Encode, decoder, encoder
from ._errors import DeserializationError, SerializerError


class Change(NamedTuple):
    new: Any
    old: Any


_NEW, _OLD = b"\x01", b"\x00"


class ChangeSerde:
    """Serializes a one-sided :class:`Change`, its value with ``inner``.

    >>> from headrace.dsl import Serdes
    >>> serde = ChangeSerde(Serdes.string())
    >>> serde.serialize("t", Change(None, "a"))
    b'\\x00a'
    >>> serde.deserialize("t", b"\\x01b")
    Change(new='b', old=None)
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def serialize(self, topic: str, change: Change | None) -> bytes | None:
        data: bytes | None = self.serializer_for(topic)(change)
        return data

    def deserialize(self, topic: str, data: bytes | None) -> Change | None:
        return self.deserializer_for(topic)(data)  # type: ignore[no-any-return]

    def serializer_for(self, topic: str) -> Encode:
        encode = encoder(self.inner, topic)

        def serialize(change: Any) -> bytes | None:
            if change is None:
                return None
            new, old = change
            if new is not None and old is not None:
                raise SerializerError("a repartitioned change carries a new or an old value")
            flag, value = (_NEW, new) if new is not None else (_OLD, old)
            data = encode(value)
            if data is not None and type(data) is not bytes:
                raise SerializerError(
                    f"the value serde of the re-grouping gave a {type(data).__name__}, not bytes"
                )
            return flag + (data or b"")

        return serialize

    def deserializer_for(self, topic: str) -> Decode:
        decode = decoder(self.inner, topic)

        def deserialize(data: bytes | None) -> Change | None:
            if data is None:
                return None
            flag = data[:1]
            if flag not in (_NEW, _OLD):
                raise DeserializationError("not a repartitioned change: bad flag byte")
            value = decode(data[1:])
            return Change(value, None) if flag == _NEW else Change(None, value)

        return deserialize

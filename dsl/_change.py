"""Change: what one KTable node tells the next about one key.

A table update travels as a record whose value is ``Change(new, old)``: the value the
key has now and, when a downstream node asked for it, the value it had before (Kafka
Streams' internal ``Change``). ``new`` of ``None`` is a delete. Operators that must undo
a previous contribution (a table re-grouped by another key, a table-table join) need
``old``; every other node leaves it ``None`` and saves the read.

Across a repartition topic a change is a subtract record (old only) and an add record
(new only), or one record with both when old and new stay in one group (KIP-904);
:class:`ChangeSerde` writes one flag byte and the inner value's bytes (for both, the new
value's length in 4 bytes, its bytes, then the old value's).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from ._binding import Decode, Encode, decoder, encoder
from ._errors import DeserializationError, SerializerError


class Change(NamedTuple):
    new: Any
    old: Any


_NEW, _OLD, _BOTH = b"\x01", b"\x00", b"\x02"


class ChangeSerde:
    """Serializes a :class:`Change`, its values with ``inner``.

    >>> from headrace.dsl import Serdes
    >>> serde = ChangeSerde(Serdes.string())
    >>> serde.serialize("t", Change(None, "a"))
    b'\\x00a'
    >>> serde.deserialize("t", b"\\x01b")
    Change(new='b', old=None)
    >>> serde.deserialize("t", serde.serialize("t", Change("b", "a")))
    Change(new='b', old='a')
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
                new_data, old_data = _checked(encode(new)), _checked(encode(old))
                return _BOTH + len(new_data).to_bytes(4, "big") + new_data + old_data
            flag, value = (_NEW, new) if new is not None else (_OLD, old)
            return flag + _checked(encode(value))

        return serialize

    def deserializer_for(self, topic: str) -> Decode:
        decode = decoder(self.inner, topic)

        def deserialize(data: bytes | None) -> Change | None:
            if data is None:
                return None
            flag = data[:1]
            if flag == _BOTH:
                if len(data) < 5:
                    raise DeserializationError("a repartitioned change cut short")
                end = 5 + int.from_bytes(data[1:5], "big")
                if end > len(data):
                    raise DeserializationError("a repartitioned change cut short")
                return Change(decode(data[5:end]), decode(data[end:]))
            if flag not in (_NEW, _OLD):
                raise DeserializationError("not a repartitioned change: bad flag byte")
            value = decode(data[1:])
            return Change(value, None) if flag == _NEW else Change(None, value)

        return deserialize


def _checked(data: Any) -> bytes:
    if data is not None and type(data) is not bytes:
        raise SerializerError(
            f"the value serde of the re-grouping gave a {type(data).__name__}, not bytes"
        )
    return data or b""

"""The buffer where stream records wait out a stream-table join's grace period (KIP-914).

Kafka Streams' ``RocksDBTimeOrderedKeyValueBuffer`` as its stream-table join uses it:

* the buffer's own stream time is the largest timestamp of the records it accepted
  (a record joined at once does not move it);
* a record older than that time minus the grace is refused (the join takes it at
  once); any other is held;
* after each accepted record, every held record whose timestamp is at or before the
  buffer's time minus the grace leaves, in timestamp order (then key bytes, then
  arrival), to be joined as of its own timestamp.

Held records live in a changelogged key-value store named ``<join name>-Buffer``, so a
restarted task finds them, with the buffer's time and the arrival counter, in it:

* ``\\x01<timestamp: 8><key bytes><arrival: 8>`` to ``<value length: 4><value bytes>
  <headers>``, each held record (its value serialized with the stream's serde, its
  headers kept for its result);
* ``\\x00`` to ``<stream time: 8><arrival: 8>``, the buffer's state.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from typing import Any

from headrace.streams import Headers

from ._binding import decoder, encoder

_HELD, _STATE = b"\x01", b"\x00"
_FLIP = 2**63
_TIME = struct.Struct(">Q")
_STATE_LAYOUT = struct.Struct(">QQ")
_LENGTH = struct.Struct(">I")
_HEADER = struct.Struct(">HI")

Held = tuple[Any, Any, int, Headers]
"""A record leaving the buffer: key, value, timestamp, headers."""


def _time(ts: int) -> bytes:
    return _TIME.pack(ts + _FLIP)


def _pack_record(value: bytes, headers: Headers) -> bytes:
    parts = [_LENGTH.pack(len(value)), value]
    for name, raw in headers:
        encoded = name.encode()
        parts += [_HEADER.pack(len(encoded), len(raw)), encoded, raw]
    return b"".join(parts)


def _unpack_record(data: bytes) -> tuple[bytes, Headers]:
    (length,) = _LENGTH.unpack_from(data)
    at = _LENGTH.size + length
    value = data[_LENGTH.size : at]
    headers = []
    while at < len(data):
        name_length, raw_length = _HEADER.unpack_from(data, at)
        at += _HEADER.size
        name = data[at : at + name_length].decode()
        at += name_length
        headers.append((name, data[at : at + raw_length]))
        at += raw_length
    return value, tuple(headers)


class GraceBuffer:
    """Holds stream records for ``grace`` ms of the buffer's stream time.

    ``store`` is the task's bytes store (``.inner`` of the typed store) named for the
    join; ``key_serde``/``value_serde`` are the stream's, bound to the store's topic.
    """

    def __init__(
        self, store: Any, topic: str, grace: int, key_serde: Any, value_serde: Any
    ) -> None:
        self._store = store
        self._grace = grace
        self._ek, self._dk = encoder(key_serde, topic), decoder(key_serde, topic)
        self._ev, self._dv = encoder(value_serde, topic), decoder(value_serde, topic)
        raw = store.get(_STATE)
        self.stream_time, self._arrivals = (-1, 0) if raw is None else _STATE_LAYOUT.unpack(raw)
        if raw is not None:
            self.stream_time -= _FLIP

    def put(self, key: Any, value: Any, timestamp: int, headers: Headers) -> bool:
        """Hold the record, unless it is already past the grace (``False``: join it now)."""
        if self.stream_time - self._grace > timestamp:
            return False
        self._arrivals += 1
        self.stream_time = max(self.stream_time, timestamp)
        held = _HELD + _time(timestamp) + self._ek(key) + _TIME.pack(self._arrivals)
        self._store.put_all(
            [
                (held, _pack_record(self._ev(value), headers)),
                (_STATE, _STATE_LAYOUT.pack(self.stream_time + _FLIP, self._arrivals)),
            ]
        )
        return True

    def evict(self, emit: Callable[[list[Held]], None]) -> None:
        """Release, in order, every held record the buffer's time has passed by the grace."""
        bound = self.stream_time - self._grace
        leaving = list(self._store.range(_HELD, _HELD + _time(bound + 1)))
        if not leaving:
            return
        self._store.put_all([(held, None) for held, _ in leaving])
        emit(list(self._decode(leaving)))

    def _decode(self, entries: list[tuple[bytes, bytes]]) -> Iterator[Held]:
        dk, dv = self._dk, self._dv
        for held, data in entries:
            timestamp = int(_TIME.unpack_from(held, 1)[0]) - _FLIP
            value, headers = _unpack_record(data)
            yield dk(held[1 + _TIME.size : -_TIME.size]), dv(value), timestamp, headers

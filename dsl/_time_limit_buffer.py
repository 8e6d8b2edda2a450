"""The buffer behind ``suppress(Suppressed.until_time_limit(...))``, as Kafka Streams'
``KTableSuppressProcessor`` with a record-time buffer.

Per record, in order:

1. stream time becomes the newest record timestamp this operator has seen;
2. the record's change goes into the buffer under its key. A key already held keeps
   its place (the timestamp of its first held update, Kafka Streams' "non-resetting"
   put); the change, timestamp and headers held are the newest;
3. held keys go out, oldest place first (then by key bytes), while their place is at
   or before ``stream time - time_to_wait``: each as ``Change(new, old)`` of its newest
   update, stamped with that update's timestamp, deletes included;
4. if the buffer is then over a bound of its ``BufferConfig``, it emits oldest-first
   until it is not, or, set to shut down when full, fails the task.

The buffer is a changelogged key-value store (key bytes to place, timestamp, headers
and the new and old value bytes), so a restarted task finds what was held; the order of
places is rebuilt from it in ``init``. Stream time starts afresh after a restart, as in
Kafka Streams. A key's size towards ``max_bytes`` is its stored bytes plus 8 (its
place), which is near Kafka Streams' estimate but not the same number.
"""

from __future__ import annotations

import heapq
import struct
from typing import TYPE_CHECKING, Any

from headrace.streams import BatchProcessor, ProcessingError, ProcessorContext, Rec

from ._binding import decoder, encoder
from ._change import Change
from ._suppress import BufferConfig

if TYPE_CHECKING:
    from ._graph import TableGraphNode

_HEAD = struct.Struct(">qqiii")  # place, timestamp, new length, old length, header count
_HEADER = struct.Struct(">hi")  # name length, value length
_new_tuple = tuple.__new__


def _pack(place: int, ts: int, new: bytes | None, old: bytes | None, headers: Any) -> bytes:
    parts = [
        _HEAD.pack(
            place,
            ts,
            -1 if new is None else len(new),
            -1 if old is None else len(old),
            len(headers),
        ),
        new or b"",
        old or b"",
    ]
    for name, value in headers:
        raw_name = name.encode()
        parts += [_HEADER.pack(len(raw_name), len(value)), raw_name, value]
    return b"".join(parts)


def _unpack(data: bytes) -> tuple[int, int, bytes | None, bytes | None, tuple[Any, ...]]:
    place, ts, new_len, old_len, count = _HEAD.unpack_from(data)
    at = _HEAD.size
    new = None if new_len < 0 else data[at : at + new_len]
    at += max(new_len, 0)
    old = None if old_len < 0 else data[at : at + old_len]
    at += max(old_len, 0)
    headers = []
    for _ in range(count):
        name_len, value_len = _HEADER.unpack_from(data, at)
        at += _HEADER.size
        name = data[at : at + name_len].decode()
        at += name_len
        headers.append((name, data[at : at + value_len]))
        at += value_len
    return place, ts, new, old, tuple(headers)


class TimeLimitBuffer(BatchProcessor):
    def __init__(
        self,
        node: TableGraphNode,
        store_name: str,
        key_serde: Any,
        value_serde: Any,
        wait_ms: int,
        config: BufferConfig,
    ) -> None:
        self._node, self._store_name = node, store_name
        self._key_serde, self._value_serde = key_serde, value_serde
        self._wait, self._config = wait_ms, config

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        topic = f"{context.application_id}-{self._store_name}-changelog"
        self._ek, self._dk = encoder(self._key_serde, topic), decoder(self._key_serde, topic)
        self._ev, self._dv = encoder(self._value_serde, topic), decoder(self._value_serde, topic)
        self._store = context.get_state_store(self._store_name)
        self._observed = -1
        self._places: dict[bytes, tuple[int, int]] = {}  # key bytes -> (place, size)
        self._order: list[tuple[int, bytes]] = []  # a heap of (place, key bytes)
        self._size = 0
        for kb, data in self._store.all():
            self._hold(kb, _HEAD.unpack_from(data)[0], len(data))

    def _hold(self, kb: bytes, place: int, stored: int) -> None:
        size = 8 + len(kb) + stored
        self._size += size
        self._places[kb] = (place, size)
        heapq.heappush(self._order, (place, kb))

    def process_batch(self, batch: list[Rec]) -> None:
        ek, ev, places = self._ek, self._ev, self._places
        out: list[Rec] = []
        for k, change, ts, h, o in batch:
            if k is None:
                continue
            if ts > self._observed:
                self._observed = ts
            kb = ek(k)
            held = places.get(kb)
            data = _pack(ts if held is None else held[0], ts, ev(change[0]), ev(change[1]), h)
            self._store.put(kb, data)
            if held is None:
                self._hold(kb, ts, len(data))
            else:
                size = 8 + len(kb) + len(data)
                self._size += size - held[1]
                places[kb] = (held[0], size)
            self._emit_while(lambda: self._order[0][0] <= self._observed - self._wait, o, out)
            if self._over():
                if self._config.shuts_down_when_full:
                    raise ProcessingError(
                        f"{self.context.node_name} buffer exceeded its bounds: "
                        f"{len(places)}/{self._config.max_records_limit} records, "
                        f"{self._size}/{self._config.max_bytes_limit} bytes",
                        node=self.context.node_name,
                        topic=self.context.topic,
                        partition=self.context.partition,
                    )
                self._emit_while(self._over, o, out)
        if out:
            self.context.forward_batch(out)

    def _over(self) -> bool:
        config = self._config
        records, size = config.max_records_limit, config.max_bytes_limit
        return (records is not None and len(self._places) > records) or (
            size is not None and self._size > size
        )

    def _emit_while(self, condition: Any, offset: int, out: list[Rec]) -> None:
        order, places, dk, dv = self._order, self._places, self._dk, self._dv
        while order:
            place, kb = order[0]
            held = places.get(kb)
            if held is None or held[0] != place:
                heapq.heappop(order)  # a key that went out since this entry was pushed
                continue
            if not condition():
                return
            heapq.heappop(order)
            del places[kb]
            self._size -= held[1]
            _, ts, new, old, headers = _unpack(self._store.get(kb))
            self._store.delete(kb)
            change = (None if new is None else dv(new), None if old is None else dv(old))
            out.append((dk(kb), _new_tuple(Change, change), ts, headers, offset))

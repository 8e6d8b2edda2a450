"""The processors behind KTable operators, and the value getters joins will read.

Table records carry ``Change(new, old)`` values (see ``_change``). A node computes
``old`` only when its own readers asked for it (``send_old_values`` on its graph node).

Value getters answer "what is this key's value in the table now?" for a table at any
point of a chain: a materialized table reads its store, a filter or ``map_values``
applies itself to its parent's answer. A stream-table or table-table join reads the
other side through one, so a join never needs the other side materialized twice.
``get_with_timestamp`` answers with the row's timestamp too (Kafka Streams'
``KTableValueGetter`` returns ``ValueAndTimestamp``), which a table-table join stamps
its result with; a table kept in a store without timestamps answers ``NO_TIMESTAMP``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from headrace.state import CacheEntry, ValueAndTimestamp
from headrace.streams import BatchProcessor, ProcessorContext, Rec

from ._binding import decoder, encoder
from ._change import Change

if TYPE_CHECKING:
    from ._graph import TableGraphNode

_new_tuple = tuple.__new__
TIMESTAMP_SIZE = 8  # a timestamped store keeps each value behind its 8-byte timestamp
pack_timestamp = struct.Struct(">q").pack

NO_TIMESTAMP = -1
"""The timestamp of a row whose store keeps none: below every record's, so a join's
max(record's, row's) is the record's."""


# -- value getters ----------------------------------------------------------------------


class ValueGetter(Protocol):
    def init(self, context: ProcessorContext) -> None: ...

    def get(self, key: Any) -> Any: ...


class TimestampedValueGetter(ValueGetter, Protocol):
    def get_with_timestamp(self, key: Any) -> ValueAndTimestamp[Any] | None: ...


def timestamped_get(getter: ValueGetter) -> Callable[[Any], ValueAndTimestamp[Any] | None]:
    """``getter``'s ``get_with_timestamp``; for a getter without one (a table of another
    kind), its value with ``NO_TIMESTAMP``."""
    if isinstance(getter, StoreValueGetter) and getter.store_get_with_timestamp is not None:
        return getter.store_get_with_timestamp  # the store's own: one call less per lookup
    with_timestamp = getattr(getter, "get_with_timestamp", None)
    if with_timestamp is not None:
        return with_timestamp  # type: ignore[no-any-return]
    get = getter.get

    def fallback(key: Any) -> ValueAndTimestamp[Any] | None:
        value = get(key)
        return None if value is None else ValueAndTimestamp(value, NO_TIMESTAMP)

    return fallback


class ValueGetterSupplier(Protocol):
    @property
    def store_names(self) -> tuple[str, ...]:
        """The stores a processor using the getter must be connected to."""
        ...

    def get(self) -> ValueGetter: ...


class StoreValueGetter:
    def __init__(self, store_name: str) -> None:
        self._name = store_name

    def init(self, context: ProcessorContext) -> None:
        self._store = context.get_state_store(self._name)
        self.store_get_with_timestamp: Callable[[Any], ValueAndTimestamp[Any] | None] | None = (
            getattr(self._store, "get_with_timestamp", None)
        )

    def get(self, key: Any) -> Any:
        return self._store.get(key)

    def get_with_timestamp(self, key: Any) -> ValueAndTimestamp[Any] | None:
        if self.store_get_with_timestamp is not None:
            return self.store_get_with_timestamp(key)
        value = self._store.get(key)
        return None if value is None else ValueAndTimestamp(value, NO_TIMESTAMP)


class StoreValueGetterSupplier:
    def __init__(self, store_name: str) -> None:
        self.store_names = (store_name,)

    def get(self) -> ValueGetter:
        return StoreValueGetter(self.store_names[0])


class DerivedValueGetter:
    """A parent's getter with ``fn(key, value)`` applied to what it returns."""

    def __init__(self, parent: ValueGetter, fn: Callable[[Any, Any], Any]) -> None:
        self._parent = parent
        self._fn = fn

    def init(self, context: ProcessorContext) -> None:
        self._parent.init(context)
        self._parent_with_timestamp = timestamped_get(self._parent)

    def get(self, key: Any) -> Any:
        value = self._parent.get(key)
        return None if value is None else self._fn(key, value)

    def get_with_timestamp(self, key: Any) -> ValueAndTimestamp[Any] | None:
        """The parent's row through ``fn``, keeping the parent's timestamp (a filter
        or ``map_values`` does not change a row's timestamp)."""
        row = self._parent_with_timestamp(key)
        if row is None:
            return None
        value = self._fn(key, row[0])
        return None if value is None else ValueAndTimestamp(value, row[1])


class DerivedValueGetterSupplier:
    def __init__(self, parent: ValueGetterSupplier, fn: Callable[[Any, Any], Any]) -> None:
        self._parent = parent
        self._fn = fn
        self.store_names = parent.store_names

    def get(self) -> ValueGetter:
        return DerivedValueGetter(self._parent.get(), self._fn)


# -- processors -------------------------------------------------------------------------


def _stamping(encode: Callable[[Any], bytes | None]) -> Callable[[Any, int], bytes | None]:
    """``encode``, its bytes put behind ``timestamp`` (a delete stays ``None``)."""

    def stamped(value: Any, timestamp: int) -> bytes | None:
        data = encode(value)
        return None if data is None else pack_timestamp(timestamp) + data

    return stamped


def _unstamping(decode: Callable[[bytes | None], Any]) -> Callable[[bytes | None], Any]:
    """``decode`` of a stamped value's own bytes."""
    return lambda data: None if data is None else decode(data[TIMESTAMP_SIZE:])


class TableSource(BatchProcessor):
    """Upserts each record into the table's store; ``None`` values delete.

    Records with a ``None`` key cannot be a table row and are skipped.
    """

    def __init__(self, node: TableGraphNode, store_name: str, key_serde: Any, value_serde: Any):
        self._node, self._store_name = node, store_name
        self._key_serde, self._value_serde = key_serde, value_serde

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        topic = f"{context.application_id}-{self._store_name}-changelog"
        self._ek, self._dk = encoder(self._key_serde, topic), decoder(self._key_serde, topic)
        encode, self._dv = encoder(self._value_serde, topic), decoder(self._value_serde, topic)
        typed = context.get_state_store(self._store_name)
        self._bytes = typed.inner
        # ``_ev(value, timestamp)``: a timestamped store keeps each row behind its
        # record's timestamp (``headrace.state``'s ``_timestamped`` layout).
        self._ev: Callable[[Any, int], bytes | None]
        if hasattr(typed, "get_with_timestamp"):
            self._ev, self._dv = _stamping(encode), _unstamping(self._dv)
        else:
            self._ev = lambda value, _timestamp: encode(value)
        self._send_old = self._node.send_old_values
        self._pending: dict[bytes, int] = {}
        self._cached = self._bytes.set_flush_listener(self._on_flush, self._send_old)

    def _on_flush(self, entries: Sequence[CacheEntry]) -> None:
        dk, dv, pending, send_old = self._dk, self._dv, self._pending, self._send_old
        out: list[Rec] = [
            (
                dk(e.key),
                _new_tuple(Change, (dv(e.new_value), dv(e.old_value) if send_old else None)),
                pending.pop(e.key, e.timestamp),
                (),
                -1,
            )
            for e in entries
        ]
        if out:
            self.context.forward_batch(out)

    def process_batch(self, batch: list[Rec]) -> None:
        ek, ev, store = self._ek, self._ev, self._bytes
        if self._cached:
            pending = self._pending
            for k, v, ts, _h, _o in batch:
                if k is None:
                    continue
                kb = ek(k)
                store.put(kb, ev(v, ts))
                pending[kb] = ts
            return
        out: list[Rec] = []
        send_old, dv = self._send_old, self._dv
        for k, v, ts, h, o in batch:
            if k is None:
                continue
            kb = ek(k)
            old = dv(store.get(kb)) if send_old else None
            store.put(kb, ev(v, ts))
            out.append((k, _new_tuple(Change, (v, old)), ts, h, o))
        if out:
            self.context.forward_batch(out)


class TableFilter(BatchProcessor):
    """Keeps a row while ``predicate(key, value) == keep``; a row that does not pass is
    a delete downstream. Knowing the old value, a change that was and stays invisible
    is dropped; without it, the delete is sent (as Kafka Streams does)."""

    def __init__(self, node: TableGraphNode, predicate: Callable[[Any, Any], bool], keep: bool):
        self._node, self._predicate, self._keep = node, predicate, keep

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._send_old = self._node.send_old_values

    def process_batch(self, batch: list[Rec]) -> None:
        predicate, keep, send_old = self._predicate, self._keep, self._send_old
        out: list[Rec] = []
        for k, change, ts, h, o in batch:
            new, old = change
            if new is not None and bool(predicate(k, new)) != keep:
                new = None
            if not send_old or (old is not None and bool(predicate(k, old)) != keep):
                old = None
            if new is None and old is None and send_old:
                # Without old values a delete may hide a row readers saw: send it anyway.
                continue
            out.append((k, _new_tuple(Change, (new, old)), ts, h, o))
        if out:
            self.context.forward_batch(out)


class TableMapValues(BatchProcessor):
    def __init__(self, node: TableGraphNode, mapper: Callable[[Any, Any], Any]) -> None:
        self._node, self._mapper = node, mapper

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._send_old = self._node.send_old_values

    def process_batch(self, batch: list[Rec]) -> None:
        mapper, send_old = self._mapper, self._send_old
        out = [
            (
                k,
                _new_tuple(
                    Change,
                    (
                        None if c[0] is None else mapper(k, c[0]),
                        None if not send_old or c[1] is None else mapper(k, c[1]),
                    ),
                ),
                ts,
                h,
                o,
            )
            for k, c, ts, h, o in batch
        ]
        if out:
            self.context.forward_batch(out)


class StoreWriter(BatchProcessor):
    """A processor that writes into one typed store, bound at ``init``."""

    def __init__(self, store_name: str) -> None:
        self._store_name = store_name

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        self._store = context.get_state_store(self._store_name)


class Materialize(StoreWriter):
    """Writes each change's new value, with its timestamp, into a store and passes the
    change on; this is how a filtered or mapped table becomes queryable."""

    def process_batch(self, batch: list[Rec]) -> None:
        put = getattr(self._store, "put_with_timestamp", None)
        if put is None:  # a store without timestamps
            plain_put = self._store.put
            for k, change, _ts, _h, _o in batch:
                plain_put(k, change[0])
        else:
            for k, change, ts, _h, _o in batch:
                put(k, change[0], ts)
        self.context.forward_batch(batch)


def to_stream_fn(batch: list[Rec]) -> list[Rec]:
    return [(k, c[0], ts, h, o) for k, c, ts, h, o in batch]


def drop_tombstones_fn(batch: list[Rec]) -> list[Rec]:
    return [r for r in batch if r[1][0] is not None]


def group_by_map_fn(
    selector: Callable[[Any, Any], tuple[Any, Any]],
) -> Callable[[list[Rec]], list[Rec]]:
    """Each change becomes a subtract record for the old row's new key (first) and an
    add record for the new row's new key, as Kafka Streams' table re-grouping does; or,
    when both keys are the same, one record with both values (KIP-904), which the
    aggregate applies subtractor then adder to and emits once."""

    def fn(batch: list[Rec]) -> list[Rec]:
        out: list[Rec] = []
        for k, (new, old), ts, h, o in batch:
            old_pair = None if old is None else selector(k, old)
            new_pair = None if new is None else selector(k, new)
            if old_pair is not None and new_pair is not None and old_pair[0] == new_pair[0]:
                out.append((new_pair[0], _new_tuple(Change, (new_pair[1], old_pair[1])), ts, h, o))
                continue
            if old_pair is not None:
                out.append((old_pair[0], _new_tuple(Change, (None, old_pair[1])), ts, h, o))
            if new_pair is not None:
                out.append((new_pair[0], _new_tuple(Change, (new_pair[1], None)), ts, h, o))
        return out

    return fn

"""Tables kept in versioned stores (KIP-889): the source processor and the value getter.

A table from ``builder.table`` or ``to_table`` materialized with a history retention
(``materialized(..., history_retention=...)``) keeps every row's versions
(``headrace.state`` versioned stores). Its source follows Kafka Streams'
``KTableSource`` over a versioned store:

* each record is put as a version at its own timestamp; one the store drops (older
  than the history retention) is not forwarded either;
* every other record is forwarded, one older than its key's latest version included
  (it went into history); its old value is the key's latest value, as Kafka Streams
  reads it;
* there is no write cache: a versioned store has none.

Its value getter answers ``get(key)`` with the latest value and ``get_as_of(key, t)``
with the value valid at ``t``; a stream-table join reads a versioned table through the
latter, as of each stream record's timestamp (KIP-914, ``_stream_table_join``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from headrace.state import PUT_RETURN_CODE_NOT_PUT, ValueAndTimestamp
from headrace.streams import BatchProcessor, Processor, ProcessorContext, Rec

from ._binding import decoder, encoder
from ._change import Change
from ._table_nodes import StoreValueGetterSupplier, TableSource, ValueGetterSupplier

if TYPE_CHECKING:
    from ._graph import TableGraphNode
    from ._materialized import Materialized

_new_tuple = tuple.__new__


class VersionedTableSource(BatchProcessor):
    """Puts each record into the versioned store and forwards what the store kept."""

    def __init__(self, node: TableGraphNode, store_name: str, key_serde: Any, value_serde: Any):
        self._node, self._store_name = node, store_name
        self._key_serde, self._value_serde = key_serde, value_serde

    def init(self, context: ProcessorContext) -> None:
        self.context = context
        store = context.get_state_store(self._store_name)
        self._ek, self._ev = (
            encoder(self._key_serde, store.topic),
            encoder(self._value_serde, store.topic),
        )
        self._dv = decoder(self._value_serde, store.topic)
        self._bytes = store.inner
        self._send_old = self._node.send_old_values

    def process_batch(self, batch: list[Rec]) -> None:
        ek, ev, dv, store, send_old = self._ek, self._ev, self._dv, self._bytes, self._send_old
        out: list[Rec] = []
        for k, v, ts, h, o in batch:
            if k is None:
                continue
            kb = ek(k)
            latest = store.get(kb) if send_old else None
            if store.put(kb, None if v is None else ev(v), ts) == PUT_RETURN_CODE_NOT_PUT:
                continue
            old = None if latest is None else dv(latest.value)
            out.append((k, _new_tuple(Change, (v, old)), ts, h, o))
        if out:
            self.context.forward_batch(out)


class VersionedValueGetter:
    """Reads a versioned table's store: the latest value, or the one valid at a time."""

    versioned = True

    def __init__(self, store_name: str) -> None:
        self._name = store_name

    def init(self, context: ProcessorContext) -> None:
        self._store = context.get_state_store(self._name)

    def get(self, key: Any) -> Any:
        record = self._store.get(key)
        return None if record is None else record.value

    def get_as_of(self, key: Any, timestamp: int) -> Any:
        record = self._store.get(key, timestamp)
        return None if record is None else record.value

    def get_with_timestamp(self, key: Any) -> ValueAndTimestamp[Any] | None:
        """The latest value with its version's timestamp (a table-table join stamps its
        result with it, as Kafka Streams' getter of a versioned table answers)."""
        record = self._store.get(key)
        return None if record is None else ValueAndTimestamp(record.value, record.timestamp)


class VersionedValueGetterSupplier:
    def __init__(self, store_name: str, history_retention: int) -> None:
        self.store_names = (store_name,)
        self.history_retention = history_retention

    def get(self) -> VersionedValueGetter:
        return VersionedValueGetter(self.store_names[0])


class TableSourceParts(NamedTuple):
    """What a table read from a topic (or a stream) is made of, for its store's kind."""

    store_builder: Any
    processor: Callable[[TableGraphNode], Callable[[], Processor | BatchProcessor]]
    getter: ValueGetterSupplier


def table_source_parts(store: Materialized) -> TableSourceParts:
    """The store, source processor and value getter of a table kept in ``store``: a
    versioned store when it has a history retention, else a key-value store."""
    name, ks, vs = store.store_name, store.key_serde, store.value_serde
    if store.history_retention_ms is not None:
        return TableSourceParts(
            store.versioned_store(),
            lambda node: lambda: VersionedTableSource(node, name, ks, vs),
            VersionedValueGetterSupplier(name, store.history_retention_ms),
        )
    return TableSourceParts(
        store.key_value_store(timestamped=True),  # joins stamp results with row times
        lambda node: lambda: TableSource(node, name, ks, vs),
        StoreValueGetterSupplier(name),
    )

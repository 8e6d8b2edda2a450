"""KGroupedStream and KGroupedTable: records gathered by key, ready to aggregate.

A grouped stream whose key may have changed upstream is repartitioned first, through
the internal topic ``<application_id>-<name>-repartition``; ``name`` is the grouping's
name when given, else the store's name, so it stays the same while the program does.
Aggregations of one grouped stream share its repartition topic.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, overload

from . import _operators as ops
from ._aggregate_base import AggregateSpec
from ._change import ChangeSerde
from ._cogroup import CogroupedKStream
from ._folds import AggregateFold, CountFold, Fold, ReduceFold
from ._graph import GraphNode, RepartitionGraphNode, TableGraphNode
from ._ktable import KTable
from ._materialized import Materialized
from ._serdes import Serdes
from ._stream_aggregate import StreamAggregate
from ._table_aggregate import TableAggregate, TableFold, count_fold
from ._table_nodes import StoreValueGetterSupplier
from ._type_vars import VR, K, V
from ._windows import AnyWindows, SessionWindows, SlidingWindows, TimeWindows

if TYPE_CHECKING:
    from ._builder import StreamsBuilder
    from ._kstream import KStream
    from ._windowed_stream import SessionWindowedKStream, TimeWindowedKStream


def _transform(fn: ops.BatchFn) -> Callable[[], ops.Transform]:
    return lambda: ops.Transform(fn)


class KGroupedStream(Generic[K, V]):
    """A stream's records gathered by key (``group_by_key``, ``group_by``), to aggregate."""

    __slots__ = ("_repartition", "_stream", "key_serde", "name", "value_serde")

    def __init__(
        self, stream: KStream[Any, Any], key_serde: Any, value_serde: Any, name: str | None
    ) -> None:
        self._stream = stream
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.name = name
        # One repartition node per grouping, made by its first aggregation.
        self._repartition: list[GraphNode] = []

    @property
    def builder(self) -> StreamsBuilder:
        return self._stream._builder

    def input_node(self, store_name: str) -> GraphNode:
        """The node aggregations read from: the stream itself, or its repartition."""
        stream = self._stream
        if not stream.repartition_required:
            return stream._node
        if not self._repartition:
            node = RepartitionGraphNode(
                self.name or store_name,
                (stream._node,),
                key_serde=self.key_serde,
                value_serde=self.value_serde,
                filter_supplier=_transform(ops.drop_null_keys),
            )
            self.builder.add_node(node)
            self._repartition.append(node)
        return self._repartition[0]

    def _aggregate(
        self,
        prefix: str,
        fold: Fold,
        materialized: Materialized | None,
        value_serde: Any,
        name: str | None,
    ) -> KTable[Any, Any]:
        builder = self.builder
        store = (materialized or Materialized()).resolve(
            builder.new_name(f"{prefix}STATE-STORE-"), self.key_serde, value_serde
        )
        parent = self.input_node(store.store_name)
        spec = AggregateSpec(store.store_name, store.key_serde, store.value_serde, fold)
        node = TableGraphNode(
            name or builder.new_name(prefix),
            (parent,),
            store_builders=(store.key_value_store(timestamped=True),),
        )
        node.supplier = lambda: StreamAggregate(node, spec)
        builder.add_node(node)
        return KTable(
            builder,
            node,
            store.key_serde,
            store.value_serde,
            store_name=store.store_name,
            getter=StoreValueGetterSupplier(store.store_name),
        )

    def count(
        self, *, materialized: Materialized | None = None, name: str | None = None
    ) -> KTable[K, int]:
        """The number of records per key (records with a ``None`` key or value are skipped)."""
        return self._aggregate("KSTREAM-AGGREGATE-", CountFold(), materialized, Serdes.long(), name)

    def reduce(
        self,
        reducer: Callable[[V, V], V],
        *,
        materialized: Materialized | None = None,
        name: str | None = None,
    ) -> KTable[K, V]:
        """``reducer(aggregate, value)`` over each key's values; the first value starts it."""
        return self._aggregate(
            "KSTREAM-REDUCE-", ReduceFold(reducer), materialized, self.value_serde, name
        )

    def aggregate(
        self,
        initializer: Callable[[], VR],
        aggregator: Callable[[K, V, VR], VR],
        *,
        materialized: Materialized | None = None,
        name: str | None = None,
    ) -> KTable[K, VR]:
        """``aggregator(key, value, aggregate)`` over each key's values, from ``initializer()``."""
        fold = AggregateFold(initializer, aggregator)
        return self._aggregate("KSTREAM-AGGREGATE-", fold, materialized, None, name)

    def cogroup(self, aggregator: Callable[[K, V, VR], VR]) -> CogroupedKStream[K, VR]:
        """Start aggregating this stream together with others into one table:
        ``aggregator(key, value, aggregate)`` folds this stream's values in; add streams
        with ``CogroupedKStream.cogroup`` and finish with ``aggregate``."""
        return CogroupedKStream(((self, aggregator),))

    @overload
    def windowed_by(self, windows: SessionWindows) -> SessionWindowedKStream[K, V]: ...

    @overload
    def windowed_by(self, windows: TimeWindows | SlidingWindows) -> TimeWindowedKStream[K, V]: ...

    def windowed_by(
        self, windows: AnyWindows
    ) -> TimeWindowedKStream[K, V] | SessionWindowedKStream[K, V]:
        """Aggregate per window: ``TimeWindows``, ``SlidingWindows`` or ``SessionWindows``."""
        from ._windowed_stream import SessionWindowedKStream, TimeWindowedKStream

        if isinstance(windows, SessionWindows):
            return SessionWindowedKStream(self, windows)
        return TimeWindowedKStream(self, windows)


class KGroupedTable(Generic[K, V]):
    """Rows re-grouped by ``KTable.group_by``; each aggregation gets its own repartition."""

    __slots__ = ("_builder", "_node", "key_serde", "name", "value_serde")

    def __init__(
        self,
        builder: StreamsBuilder,
        node: GraphNode,
        key_serde: Any,
        value_serde: Any,
        name: str | None,
    ) -> None:
        self._builder = builder
        self._node = node
        self.key_serde = key_serde
        self.value_serde = value_serde
        self.name = name

    def _aggregate(
        self,
        prefix: str,
        fold: TableFold,
        materialized: Materialized | None,
        value_serde: Any,
        name: str | None,
    ) -> KTable[Any, Any]:
        builder = self._builder
        store = (materialized or Materialized()).resolve(
            builder.new_name(f"{prefix}STATE-STORE-"), self.key_serde, value_serde
        )
        repartition = RepartitionGraphNode(
            self.name or store.store_name,
            (self._node,),
            key_serde=self.key_serde,
            value_serde=ChangeSerde(self.value_serde),
            filter_supplier=_transform(ops.drop_null_keys),
        )
        builder.add_node(repartition)
        spec = AggregateSpec(store.store_name, store.key_serde, store.value_serde, fold)
        node = TableGraphNode(
            name or builder.new_name(prefix),
            (repartition,),
            store_builders=(store.key_value_store(timestamped=True),),
        )
        node.supplier = lambda: TableAggregate(node, spec)
        builder.add_node(node)
        return KTable(
            builder,
            node,
            store.key_serde,
            store.value_serde,
            store_name=store.store_name,
            getter=StoreValueGetterSupplier(store.store_name),
        )

    def count(
        self, *, materialized: Materialized | None = None, name: str | None = None
    ) -> KTable[K, int]:
        """Rows per group; a row leaving a group counts down."""
        return self._aggregate("KTABLE-AGGREGATE-", count_fold(), materialized, Serdes.long(), name)

    def reduce(
        self,
        adder: Callable[[V, V], V],
        subtractor: Callable[[V, V], V],
        *,
        materialized: Materialized | None = None,
        name: str | None = None,
    ) -> KTable[K, V]:
        """``adder(aggregate, value)`` as rows join a group, ``subtractor(aggregate, value)``
        as they leave it."""
        fold = TableFold(None, adder, subtractor, with_key=False)
        return self._aggregate("KTABLE-REDUCE-", fold, materialized, self.value_serde, name)

    def aggregate(
        self,
        initializer: Callable[[], VR],
        adder: Callable[[K, V, VR], VR],
        subtractor: Callable[[K, V, VR], VR],
        *,
        materialized: Materialized | None = None,
        name: str | None = None,
    ) -> KTable[K, VR]:
        """``adder(key, value, aggregate)`` / ``subtractor(key, value, aggregate)`` from
        ``initializer()``."""
        fold = TableFold(initializer, adder, subtractor, with_key=True)
        return self._aggregate("KTABLE-AGGREGATE-", fold, materialized, None, name)

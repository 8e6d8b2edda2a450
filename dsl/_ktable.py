"""KTable: an immutable handle on a table, the changelog view of a stream of updates.

A table comes from ``StreamsBuilder.table(topic)`` or from an aggregation. Its records
flow as ``Change(new, old)`` values between table nodes (``_change``); ``to_stream``
turns them back into plain records, deletes as ``None`` values.

What joins build on: :meth:`value_getter_supplier` (read a key's current value at this
point of the chain) and :meth:`enable_send_old_values` (have every change carry the
value it replaces).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, Literal, overload

from . import _operators as ops
from . import _table_nodes as tn
from ._errors import TopologyBuildError
from ._graph import GraphNode, ProcessorGraphNode, TableGraphNode
from ._materialized import Materialized
from ._serdes import Serdes
from ._suppress import Suppressed
from ._table_nodes import ValueGetterSupplier
from ._time_limit_buffer import TimeLimitBuffer
from ._transform_values import (
    TableTransformValues,
    TransformValuesGetterSupplier,
    ValueTransformerWithKeySupplier,
)
from ._type_vars import KO, KR, VO, VR, K, V
from ._windows import AnyWindows

if TYPE_CHECKING:
    from ._builder import StreamsBuilder
    from ._grouped import KGroupedTable
    from ._kstream import KStream

Predicate = Callable[[K, V], bool]


class KTable(Generic[K, V]):
    """A table of key-value rows, ``KTable[K, V]``; see the module docstring."""

    __slots__ = (
        "_builder",
        "_getter",
        "_node",
        "_origin",
        "_store_name",
        "_windows",
        "key_serde",
        "value_serde",
    )

    _builder: StreamsBuilder
    _node: TableGraphNode
    key_serde: Any
    value_serde: Any
    _store_name: str | None
    _getter: ValueGetterSupplier | None
    _windows: AnyWindows | None
    _origin: TableGraphNode | None

    def __init__(
        self,
        builder: StreamsBuilder,
        node: TableGraphNode,
        key_serde: Any,
        value_serde: Any,
        *,
        store_name: str | None = None,
        getter: ValueGetterSupplier | None = None,
        windows: AnyWindows | None = None,
        origin: TableGraphNode | None = None,
    ) -> None:
        for attr, value in (
            ("_builder", builder),
            ("_node", node),
            ("key_serde", key_serde),
            ("value_serde", value_serde),
            ("_store_name", store_name),
            ("_getter", getter),
            ("_windows", windows),
            ("_origin", origin),
        ):
            object.__setattr__(self, attr, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("KTable is immutable: operators return new tables")

    # -- what other operators read ------------------------------------------------------

    @property
    def node_name(self) -> str:
        return self._node.output_name

    @property
    def queryable_store_name(self) -> str | None:
        """The store holding this table's rows, if it is materialized."""
        return self._store_name

    @property
    def windows(self) -> AnyWindows | None:
        """The windows of a windowed aggregation's table; ``None`` for other tables."""
        return self._windows

    def value_getter_supplier(self) -> ValueGetterSupplier:
        """A way to read a key's current value at this point of the chain."""
        if self._getter is None:
            raise TopologyBuildError(f"table {self.node_name} cannot be read by key here")
        return self._getter

    def enable_send_old_values(self) -> None:
        self._node.enable_send_old_values()

    # -- operators ----------------------------------------------------------------------

    def _derive(
        self,
        prefix: str,
        name: str | None,
        make: Callable[[TableGraphNode], Any],
        value_serde: Any,
        getter: ValueGetterSupplier | None,
        materialized: Materialized | None,
        store_names: tuple[str, ...] = (),
    ) -> KTable[K, Any]:
        builder = self._builder
        op = TableGraphNode(
            name or builder.new_name(prefix),
            (self._node,),
            old_values_from_parent=True,
            store_names=store_names,
        )
        op.supplier = lambda: make(op)
        builder.add_node(op)
        node = op
        store_name = None
        if materialized is not None:
            node, store = materialize(
                builder, node, materialized, prefix, self.key_serde, value_serde
            )
            store_name = store.store_name
            getter = tn.StoreValueGetterSupplier(store.store_name)
            value_serde = store.value_serde
        return KTable(
            builder,
            node,
            self.key_serde,
            value_serde,
            store_name=store_name,
            getter=None if self._windows is not None else getter,
            windows=self._windows,
            origin=self._origin if materialized is None else None,
        )

    def _filtered(
        self,
        predicate: Predicate[K, V],
        keep: bool,
        name: str | None,
        materialized: Materialized | None,
    ) -> KTable[K, V]:
        getter = None
        if self._getter is not None:
            getter = tn.DerivedValueGetterSupplier(
                self._getter, lambda k, v: v if bool(predicate(k, v)) == keep else None
            )
        return self._derive(
            "KTABLE-FILTER-",
            name,
            lambda node: tn.TableFilter(node, predicate, keep),
            self.value_serde,
            getter,
            materialized,
        )

    def filter(
        self,
        predicate: Predicate[K, V],
        *,
        materialized: Materialized | None = None,
        name: str | None = None,
    ) -> KTable[K, V]:
        """Rows for which ``predicate(key, value)`` holds; a row that stops passing is deleted."""
        return self._filtered(predicate, True, name, materialized)

    def filter_not(
        self,
        predicate: Predicate[K, V],
        *,
        materialized: Materialized | None = None,
        name: str | None = None,
    ) -> KTable[K, V]:
        """Rows for which ``predicate(key, value)`` does not hold."""
        return self._filtered(predicate, False, name, materialized)

    @overload
    def map_values(
        self,
        mapper: Callable[[V], VR],
        *,
        with_key: Literal[False] = False,
        materialized: Materialized | None = None,
        name: str | None = None,
    ) -> KTable[K, VR]: ...

    @overload
    def map_values(
        self,
        mapper: Callable[[K, V], VR],
        *,
        with_key: Literal[True],
        materialized: Materialized | None = None,
        name: str | None = None,
    ) -> KTable[K, VR]: ...

    def map_values(
        self,
        mapper: Callable[..., Any],
        *,
        with_key: bool = False,
        materialized: Materialized | None = None,
        name: str | None = None,
    ) -> KTable[K, Any]:
        """Each row's value replaced by ``mapper(value)`` (``mapper(key, value)`` with ``with_key``)."""
        fn: Callable[[Any, Any], Any] = mapper if with_key else (lambda k, v: mapper(v))
        getter = None if self._getter is None else tn.DerivedValueGetterSupplier(self._getter, fn)
        return self._derive(
            "KTABLE-MAPVALUES-",
            name,
            lambda node: tn.TableMapValues(node, fn),
            None,
            getter,
            materialized,
        )

    def transform_values(
        self,
        supplier: ValueTransformerWithKeySupplier,
        *store_names: str,
        materialized: Materialized | None = None,
        name: str | None = None,
    ) -> KTable[K, Any]:
        """Each row's value replaced by ``transformer.transform(key, value)``, where
        ``supplier()`` makes a :class:`ValueTransformerWithKey` per task that may use the
        named stores; it sees deletes as ``None`` (see ``_transform_values``)."""
        getter = None
        if self._getter is not None:
            getter = TransformValuesGetterSupplier(self._getter, supplier, store_names)
        return self._derive(
            "KTABLE-TRANSFORMVALUES-",
            name,
            lambda node: TableTransformValues(node, supplier),
            None,
            getter,
            materialized,
            store_names,
        )

    def to_stream(self, *, name: str | None = None) -> KStream[K, V]:
        """The stream of this table's updates: each change's new value (``None`` for a delete;
        typed ``V``, as Kafka Streams types it, so a table that deletes rows hands its
        stream's operators a ``None`` they must expect)."""
        from ._kstream import KStream

        node = ProcessorGraphNode(
            name or self._builder.new_name("KTABLE-TOSTREAM-"),
            (self._node,),
            supplier=lambda: ops.Transform(tn.to_stream_fn),
        )
        self._builder.add_node(node)
        return KStream(
            self._builder, node, self.key_serde, self.value_serde, repartition_required=False
        )

    def group_by(
        self,
        selector: Callable[[K, V], tuple[KR, VR]],
        *,
        key_serde: Any = None,
        value_serde: Any = None,
        name: str | None = None,
    ) -> KGroupedTable[KR, VR]:
        """Re-group rows by ``selector(key, value) -> (new_key, new_value)``, through a
        repartition topic; aggregate with adder and subtractor."""
        from ._grouped import KGroupedTable

        if self._windows is not None:
            raise TopologyBuildError("group_by on a windowed table is not supported")
        self.enable_send_old_values()
        node = ProcessorGraphNode(
            self._builder.new_name("KTABLE-SELECT-"),
            (self._node,),
            supplier=lambda: ops.Transform(tn.group_by_map_fn(selector)),
        )
        self._builder.add_node(node)
        return KGroupedTable(self._builder, node, key_serde, value_serde, name)

    def suppress(self, suppressed: Suppressed, *, name: str | None = None) -> KTable[K, V]:
        """Hold back updates (see ``_suppress``): ``until_window_closes`` gives a windowed
        table's final results only, ``until_time_limit`` each key's latest update once
        stream time has moved on far enough."""
        if suppressed.time_to_wait_ms is not None:
            return self._suppress_until_time_limit(suppressed, name)
        origin = self._origin
        if self._windows is None or origin is None:
            raise TopologyBuildError(
                "suppress(until_window_closes) needs a windowed aggregation's table, "
                "reached through stateless table operators only"
            )
        origin.emit_final = True
        origin.idle_close_ms = suppressed.idle_close_ms
        node: GraphNode = self._node
        chain: list[GraphNode] = []
        while node is not origin:
            chain.append(node)
            node = node.parents[0]
        # The suppress point itself: operators in between may turn a final value into a
        # delete, which a final result leaves out; and it marks who reads final results.
        node = TableGraphNode(
            name or self._builder.new_name("KTABLE-SUPPRESS-"),
            (self._node,),
            supplier=lambda: ops.Transform(tn.drop_tombstones_fn),
        )
        self._builder.add_node(node)
        chain.append(node)
        origin.suppressed_via = tuple(chain)
        assert isinstance(node, TableGraphNode)
        return KTable(
            self._builder,
            node,
            self.key_serde,
            self.value_serde,
            store_name=self._store_name,
            getter=None,
            windows=self._windows,
            origin=origin,
        )

    def _suppress_until_time_limit(self, suppressed: Suppressed, name: str | None) -> KTable[K, V]:
        builder = self._builder
        node_name = name or builder.new_name("KTABLE-SUPPRESS-")
        buffer = Materialized(
            f"{name}-store" if name else builder.new_name("KTABLE-SUPPRESS-STATE-STORE-"),
            key_serde=Serdes.bytes(),
            value_serde=Serdes.bytes(),
            caching=False,
        )
        # The buffer keeps each change's old value, so it asks for them, as Kafka
        # Streams' suppress does; a filter upstream then drops updates nobody saw.
        self.enable_send_old_values()
        wait, config = suppressed.time_to_wait_ms, suppressed.buffer
        assert wait is not None
        key_serde, value_serde = self.key_serde, self.value_serde
        node = TableGraphNode(node_name, (self._node,), store_builders=(buffer.key_value_store(),))
        node.supplier = lambda: TimeLimitBuffer(
            node, buffer.store_name, key_serde, value_serde, wait, config
        )
        builder.add_node(node)
        return KTable(builder, node, key_serde, value_serde, windows=self._windows)

    # -- joins --------------------------------------------------------------------------

    @overload
    def join(
        self,
        other: KTable[K, VO],
        joiner: Callable[[V, VO], VR],
        /,
        *,
        materialized: Materialized | None = None,
        name: str | None = None,
    ) -> KTable[K, VR]: ...

    @overload
    def join(
        self,
        other: KTable[KO, VO],
        foreign_key_extractor: Callable[[V], KO],
        joiner: Callable[[V, VO], VR],
        /,
        *,
        materialized: Materialized | None = None,
        name: str | None = None,
    ) -> KTable[K, VR]: ...

    def join(
        self,
        other: KTable[Any, Any],
        first: Callable[..., Any],
        second: Callable[..., Any] | None = None,
        /,
        *,
        materialized: Materialized | None = None,
        name: str | None = None,
    ) -> KTable[K, Any]:
        """Rows present in both tables, ``joiner(value, other_value)``: by key with
        ``join(other, joiner)``, by foreign key with ``join(other, foreign_key_extractor,
        joiner)`` (``foreign_key_extractor(value)`` names the other table's key)."""
        from ._ktable_joins import table_join

        return table_join(self, "inner", other, first, second, materialized, name)

    @overload
    def left_join(
        self,
        other: KTable[K, VO],
        joiner: Callable[[V, VO | None], VR],
        /,
        *,
        materialized: Materialized | None = None,
        name: str | None = None,
    ) -> KTable[K, VR]: ...

    @overload
    def left_join(
        self,
        other: KTable[KO, VO],
        foreign_key_extractor: Callable[[V], KO],
        joiner: Callable[[V, VO | None], VR],
        /,
        *,
        materialized: Materialized | None = None,
        name: str | None = None,
    ) -> KTable[K, VR]: ...

    def left_join(
        self,
        other: KTable[Any, Any],
        first: Callable[..., Any],
        second: Callable[..., Any] | None = None,
        /,
        *,
        materialized: Materialized | None = None,
        name: str | None = None,
    ) -> KTable[K, Any]:
        """Every row of this table, joined with the other's when there is one
        (``joiner(value, None)`` when not); by key or by foreign key, as :meth:`join`."""
        from ._ktable_joins import table_join

        return table_join(self, "left", other, first, second, materialized, name)

    def outer_join(
        self,
        other: KTable[K, VO],
        joiner: Callable[[V | None, VO | None], VR],
        /,
        *,
        materialized: Materialized | None = None,
        name: str | None = None,
    ) -> KTable[K, VR]:
        """Rows present in either table, by key; the missing side is ``None``."""
        from ._ktable_joins import table_join

        return table_join(self, "outer", other, joiner, None, materialized, name)


def materialize(
    builder: StreamsBuilder,
    parent: TableGraphNode,
    materialized: Materialized,
    prefix: str,
    key_serde: Any,
    value_serde: Any,
) -> tuple[TableGraphNode, Materialized]:
    """Add ``<parent>-MATERIALIZE`` below ``parent``: it writes the table's new values
    into an uncached key-value store named from ``materialized`` (or after ``prefix``)
    and passes the changes on. Returns the node and the resolved store."""
    store = materialized.resolve(
        builder.new_name(f"{prefix}STATE-STORE-"), key_serde, value_serde
    ).with_caching_disabled()
    node = TableGraphNode(
        f"{parent.name}-MATERIALIZE",
        (parent,),
        supplier=lambda: tn.Materialize(store.store_name),
        # each row keeps its timestamp, for joins to stamp their results with
        store_builders=(store.key_value_store(timestamped=True),),
        old_values_from_parent=True,
    )
    builder.add_node(node)
    return node, store

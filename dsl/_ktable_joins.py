"""What ``KTable.join``, ``left_join`` and ``outer_join`` build.

``join(other, joiner)`` joins two tables by primary key (``_table_table_join``):
processors ``<name>-this`` and ``<name>-other`` and the merging node ``<name>``.
``join(other, foreign_key_extractor, joiner)`` joins by foreign key (``_fk_join``):
the subscription round trip through two internal topics, and the result table
``<name>``, kept in a store (``materialized``, or ``<name>-STATE-STORE``).
``name`` defaults to a generated ``KTABLE-JOIN-<n>`` / ``KTABLE-FK-JOIN-<n>``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from headrace.streams import Topology

from . import _table_nodes as tn
from ._copartition import CopartitionGroup
from ._errors import TopologyBuildError
from ._fk_join import (
    FkJoinSpec,
    ForeignUpdate,
    ResponseResolve,
    ResultTable,
    SubscriptionReceive,
    SubscriptionSend,
)
from ._graph import GraphNode, TableGraphNode
from ._materialized import Materialized
from ._operators import Transform, pass_through
from ._serde_roles import for_internal
from ._serdes import Serdes
from ._table_table_join import JoinValueGetterSupplier, TableJoinSide, row_fn

if TYPE_CHECKING:
    from ._ktable import KTable


def table_join(
    table: KTable,
    kind: str,
    other: Any,
    first: Callable[..., Any],
    second: Callable[..., Any] | None,
    materialized: Materialized | None,
    name: str | None,
) -> KTable:
    from ._ktable import KTable

    if not isinstance(other, KTable):
        raise TopologyBuildError(f"a table joins another table, not a {type(other).__name__}")
    if other._builder is not table._builder:
        raise TopologyBuildError("cannot join tables of two different builders")
    if table.windows is not None or other.windows is not None:
        raise TopologyBuildError("joins of windowed tables are not supported")
    if second is None:
        return _by_key(table, other, first, kind, materialized, name)
    if kind == "outer":
        raise TopologyBuildError("a foreign-key join is inner or left, not outer")
    return _by_foreign_key(table, other, first, second, kind == "left", materialized, name)


def _by_key(
    table: KTable,
    other: KTable,
    joiner: Callable[[Any, Any], Any],
    kind: str,
    materialized: Materialized | None,
    name: str | None,
) -> KTable:
    from ._ktable import KTable, materialize

    builder = table._builder
    join_name = name or builder.new_name("KTABLE-JOIN-")
    left_getter, right_getter = table.value_getter_supplier(), other.value_getter_supplier()
    row = row_fn(joiner, kind)
    # A side whose value alone makes a row tells a delete of a row that was (forwarded)
    # from a delete of a key neither side has (dropped) by the value it replaces.
    if kind != "inner":
        table.enable_send_old_values()
    if kind == "outer":
        other.enable_send_old_values()
    this = TableGraphNode(
        f"{join_name}-this",
        (table._node,),
        store_names=right_getter.store_names,
        old_values_from_parent=True,
    )
    this.supplier = lambda: TableJoinSide(this, right_getter, row, True, kind)
    that = TableGraphNode(
        f"{join_name}-other",
        (other._node,),
        store_names=left_getter.store_names,
        old_values_from_parent=True,
    )
    that.supplier = lambda: TableJoinSide(that, left_getter, row, False, kind)
    merge = TableGraphNode(
        join_name,
        (this, that),
        supplier=lambda: Transform(pass_through),
        old_values_from_parent=True,
    )
    for node in (this, that, merge):
        builder.add_node(node)
    builder.add_copartition_group(CopartitionGroup(join_name, (table._node, other._node)))
    result: TableGraphNode = merge
    getter: tn.ValueGetterSupplier = JoinValueGetterSupplier(left_getter, right_getter, row)
    store_name = None
    value_serde = None
    if materialized is not None:
        result, store = materialize(
            builder, merge, materialized, f"{join_name}-", table.key_serde, None
        )
        store_name = store.store_name
        getter = tn.StoreValueGetterSupplier(store.store_name)
        value_serde = store.value_serde
    return KTable(
        builder, result, table.key_serde, value_serde, store_name=store_name, getter=getter
    )


@dataclass(eq=False)
class _SubscribeNode(GraphNode):
    spec: FkJoinSpec | None = None

    @property
    def output_name(self) -> str:
        return f"{self.name}-subscription-send"

    def write_to_topology(self, topology: Topology) -> None:
        spec = self.spec
        assert spec is not None
        topic = f"{self.name}-subscription-registration-topic"
        topology.add_processor(
            self.output_name, lambda: SubscriptionSend(spec), *self.parent_names()
        )
        topology.add_internal_topic(topic)
        raw = Serdes.bytes()
        topology.add_sink(
            spec.subscription_sink,
            topic,
            self.output_name,
            key_serializer=raw,
            value_serializer=raw,
        )


@dataclass(eq=False)
class _AnswerNode(GraphNode):
    """The right side's half (subscriptions in, answers out) and the resolver that
    reads the answers back in the left table's task."""

    spec: FkJoinSpec | None = None
    store_builder: Any = None
    left_getter: Any = None
    right_getter: Any = None

    @property
    def output_name(self) -> str:
        return f"{self.name}-response-resolve"

    def write_to_topology(self, topology: Topology) -> None:
        spec = self.spec
        assert spec is not None
        n, raw = self.name, Serdes.bytes()
        registrations = f"{n}-subscription-registration-topic"
        responses = f"{n}-subscription-response-topic"
        left_getter, right_getter = self.left_getter, self.right_getter
        topology.add_state_store(self.store_builder)
        topology.add_source(
            f"{n}-subscription-source", registrations, key_deserializer=raw, value_deserializer=raw
        )
        topology.add_processor(
            f"{n}-subscription-receive",
            lambda: SubscriptionReceive(spec, right_getter),
            f"{n}-subscription-source",
        )
        topology.connect_processor_and_state_stores(
            f"{n}-subscription-receive", spec.subscription_store, *right_getter.store_names
        )
        topology.add_processor(
            f"{n}-foreign-update", lambda: ForeignUpdate(spec), *self.parent_names()
        )
        topology.connect_processor_and_state_stores(f"{n}-foreign-update", spec.subscription_store)
        topology.add_internal_topic(responses)
        topology.add_sink(
            f"{n}-response-sink",
            responses,
            f"{n}-subscription-receive",
            f"{n}-foreign-update",
            key_serializer=raw,
            value_serializer=raw,
        )
        topology.add_source(
            f"{n}-response-source",
            responses,
            key_deserializer=for_internal(spec.left_key_serde),
            value_deserializer=raw,
        )
        topology.add_processor(
            self.output_name, lambda: ResponseResolve(spec, left_getter), f"{n}-response-source"
        )
        topology.connect_processor_and_state_stores(self.output_name, *left_getter.store_names)


def _by_foreign_key(
    table: KTable,
    other: KTable,
    extractor: Callable[[Any], Any],
    joiner: Callable[[Any, Any], Any],
    left_join: bool,
    materialized: Materialized | None,
    name: str | None,
) -> KTable:
    from ._ktable import KTable

    builder = table._builder
    join_name = name or builder.new_name("KTABLE-FK-JOIN-")
    left_getter, right_getter = table.value_getter_supplier(), other.value_getter_supplier()
    table.enable_send_old_values()  # a row's old foreign key is unsubscribed
    store = (
        (materialized or Materialized())
        .resolve(f"{join_name}-STATE-STORE", table.key_serde, None)
        .with_caching_disabled()
    )
    spec = FkJoinSpec(
        join_name,
        extractor,
        joiner,
        left_join,
        table.key_serde,
        table.value_serde,
        other.key_serde,
        other.value_serde,
        subscription_store=f"{join_name}-subscription-store",
        result_node=join_name,
        subscription_sink=f"{join_name}-subscription-sink",
    )
    subscribe = _SubscribeNode(join_name, (table._node,), spec=spec)
    answer = _AnswerNode(
        join_name,
        (other._node,),
        spec=spec,
        store_builder=Materialized(  # keys and values are the join's own bytes
            spec.subscription_store, key_serde=Serdes.bytes(), value_serde=Serdes.bytes()
        )
        .with_caching_disabled()
        .key_value_store(),
        left_getter=left_getter,
        right_getter=right_getter,
    )
    result = TableGraphNode(
        join_name, (answer, subscribe), store_builders=(store.key_value_store(),)
    )
    result.supplier = lambda: ResultTable(
        result, store.store_name, store.key_serde, store.value_serde
    )
    for node in (subscribe, answer, result):
        builder.add_node(node)
    return KTable(
        builder,
        result,
        table.key_serde,
        store.value_serde,
        store_name=store.store_name,
        getter=tn.StoreValueGetterSupplier(store.store_name),
    )

"""GlobalKTable: a table kept whole in every process of the application.

``StreamsBuilder.global_table(topic)`` adds a global store (``Topology.add_global_store``):
its source reads every partition of ``topic`` and writes each record into a key-value
store, ``None`` values deleting. The topic is the store's changelog, so the store logs
nothing and is not cached (every lookup sees every update read so far).

Because every task can read the whole table, a stream joins it by any key it selects
(``KStream.join(global_table, key_selector, joiner)``) without co-partitioning or a
repartition topic. The host (the test driver; the runtime) reads the topic to its end
before the tasks start and keeps reading it while they run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic

from headrace.streams import Rec, Topology

from ._graph import GraphNode
from ._table_nodes import StoreValueGetterSupplier, StoreWriter, ValueGetterSupplier
from ._type_vars import K, V

if TYPE_CHECKING:
    from ._builder import StreamsBuilder


class GlobalTableUpdater(StoreWriter):
    """Upserts each record into the global store; records with a ``None`` key are skipped."""

    def process_batch(self, batch: list[Rec]) -> None:
        put = self._store.put
        for k, v, _ts, _h, _o in batch:
            if k is not None:
                put(k, v)


@dataclass(eq=False)
class GlobalStoreGraphNode(GraphNode):
    topic: str = ""
    store_builder: Any = None
    key_serde: Any = None
    value_serde: Any = None
    timestamp_extractor: Any = None

    def write_to_topology(self, topology: Topology) -> None:
        store_name = self.store_builder.name
        topology.add_global_store(
            self.store_builder,
            f"{self.name}-source",
            self.topic,
            self.name,
            lambda: GlobalTableUpdater(store_name),
            key_deserializer=self.key_serde,
            value_deserializer=self.value_serde,
            timestamp_extractor=self.timestamp_extractor,
        )


class GlobalKTable(Generic[K, V]):
    """A fully replicated table, ``GlobalKTable[K, V]``; join streams with it by a selected key."""

    __slots__ = ("_builder", "_node", "key_serde", "store_name", "topic", "value_serde")

    _builder: StreamsBuilder
    _node: GlobalStoreGraphNode
    key_serde: Any
    value_serde: Any
    store_name: str
    topic: str

    def __init__(
        self,
        builder: StreamsBuilder,
        node: GlobalStoreGraphNode,
        key_serde: Any,
        value_serde: Any,
        store_name: str,
    ) -> None:
        for attr, value in (
            ("_builder", builder),
            ("_node", node),
            ("key_serde", key_serde),
            ("value_serde", value_serde),
            ("store_name", store_name),
            ("topic", node.topic),
        ):
            object.__setattr__(self, attr, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("GlobalKTable is immutable")

    @property
    def queryable_store_name(self) -> str:
        return self.store_name

    def value_getter_supplier(self) -> ValueGetterSupplier:
        return StoreValueGetterSupplier(self.store_name)

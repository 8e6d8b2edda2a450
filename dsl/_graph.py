"""The logical graph a DSL program builds, and how each node writes itself out.

Operators add :class:`GraphNode` objects to the builder; nothing physical exists until
``StreamsBuilder.build()`` asks every node, in the order they were added (parents
first), to ``write_to_topology``. That one place is where a later optimisation
(merging repartition topics, say) can rewrite the graph before anything is fixed.

A node's children attach to its ``output_name``: the node itself for most, the source
that reads back the internal topic for a repartition.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from headrace.streams import ProcessorSupplier, StreamPartitioner, TimestampExtractor, Topology

from ._serde_roles import for_internal, for_sink


@dataclass(eq=False)
class GraphNode:
    name: str
    parents: tuple[GraphNode, ...] = ()

    @property
    def output_name(self) -> str:
        return self.name

    def parent_names(self) -> tuple[str, ...]:
        return tuple(p.output_name for p in self.parents)

    def write_to_topology(self, topology: Topology) -> None:
        raise NotImplementedError


@dataclass(eq=False)
class SourceGraphNode(GraphNode):
    topics: tuple[str, ...] = ()
    pattern: re.Pattern[str] | None = None
    key_serde: Any = None
    value_serde: Any = None
    timestamp_extractor: TimestampExtractor | None = None
    deserialization_handler: Any = None

    def write_to_topology(self, topology: Topology) -> None:
        topology.add_source(
            self.name,
            *self.topics,
            pattern=self.pattern,
            key_deserializer=self.key_serde,
            value_deserializer=self.value_serde,
            timestamp_extractor=self.timestamp_extractor,
            deserialization_handler=self.deserialization_handler,
        )


@dataclass(eq=False)
class ProcessorGraphNode(GraphNode):
    supplier: ProcessorSupplier | None = None
    store_names: tuple[str, ...] = ()

    def write_to_topology(self, topology: Topology) -> None:
        assert self.supplier is not None
        topology.add_processor(self.name, self.supplier, *self.parent_names())
        if self.store_names:
            topology.connect_processor_and_state_stores(self.name, *self.store_names)


@dataclass(eq=False)
class SinkGraphNode(GraphNode):
    """A ``to()``: each side is written as ``_serde_roles.for_sink`` says (the serde
    given or carried, the App's default, or bytes read unchanged from a source)."""

    topic: Any = None  # a topic name or a TopicNameExtractor
    key_serde: Any = None
    value_serde: Any = None
    partitioner: StreamPartitioner | None = None

    def write_to_topology(self, topology: Topology) -> None:
        topology.add_sink(
            self.name,
            self.topic,
            *self.parent_names(),
            key_serializer=for_sink(self.key_serde),
            value_serializer=for_sink(self.value_serde),
            partitioner=self.partitioner,
        )


@dataclass(eq=False)
class RepartitionGraphNode(GraphNode):
    """Writes ``<topic>-filter`` (drops null keys), ``<topic>-sink``, ``<topic>-source``.

    The topic is ``<name>-repartition``, internal, so a task runs it as
    ``<application_id>-<name>-repartition``; a side with no serde is written with the
    auto serde (``_serde_roles.for_internal``).
    """

    key_serde: Any = None
    value_serde: Any = None
    partitions: int | None = None
    partitioner: StreamPartitioner | None = None
    filter_supplier: ProcessorSupplier | None = None
    topic: str = field(init=False, default="")

    def __post_init__(self) -> None:
        self.topic = f"{self.name}-repartition"

    @property
    def output_name(self) -> str:
        return f"{self.topic}-source"

    def write_to_topology(self, topology: Topology) -> None:
        assert self.filter_supplier is not None
        filter_name = f"{self.topic}-filter"
        key_serde, value_serde = for_internal(self.key_serde), for_internal(self.value_serde)
        topology.add_internal_topic(self.topic, self.partitions)
        topology.add_processor(filter_name, self.filter_supplier, *self.parent_names())
        topology.add_sink(
            f"{self.topic}-sink",
            self.topic,
            filter_name,
            key_serializer=key_serde,
            value_serializer=value_serde,
            partitioner=self.partitioner,
        )
        topology.add_source(
            self.output_name,
            self.topic,
            key_deserializer=key_serde,
            value_deserializer=value_serde,
        )


@dataclass(eq=False)
class TableGraphNode(ProcessorGraphNode):
    """A processor whose output is a table's changes, with the stores it owns.

    ``send_old_values`` is switched on by readers that need each change's old value
    (a re-grouping, a join); a node whose old values derive from its parent's
    (``old_values_from_parent``: filter, ``map_values``) passes the request up.
    ``emit_final`` and ``idle_close_ms`` put a windowed aggregation in final-results
    mode. All of these are read when a task creates the processor, after the program
    is complete.
    """

    store_builders: tuple[Any, ...] = ()
    send_old_values: bool = False
    old_values_from_parent: bool = False
    emit_final: bool = False
    idle_close_ms: int | None = None
    final_store: Any = None  # the stream-time store final-results mode keeps
    # Set by suppress(): the nodes from this aggregation to the suppress point, which
    # alone may read its (now final-only) output.
    suppressed_via: tuple[GraphNode, ...] | None = None

    def enable_send_old_values(self) -> None:
        self.send_old_values = True
        if self.old_values_from_parent:
            for parent in self.parents:
                if isinstance(parent, TableGraphNode):
                    parent.enable_send_old_values()

    def write_to_topology(self, topology: Topology) -> None:
        assert self.supplier is not None
        topology.add_processor(self.name, self.supplier, *self.parent_names())
        stores = [*self.store_builders]
        if self.emit_final and self.final_store is not None:
            stores.append(self.final_store)
        for store in stores:
            topology.add_state_store(store, self.name)
        if self.store_names:
            topology.connect_processor_and_state_stores(self.name, *self.store_names)

"""The physical topology: sources, processors, sinks and the stores they use.

A :class:`Topology` is a description, built once (by hand or by ``dsl.StreamsBuilder``)
and then instantiated per task by :class:`~streams.TaskExecutor`. Nodes are added
parents-first, so insertion order is a topological order; the executor relies on that.

Sub-topologies are the connected parts of the node graph, where two nodes are connected
if one is the other's parent or if they share a state store. Each is numbered by the
position of its first node, which keeps ids stable while a program is extended at the end.
Internal topics (repartition topics) are stored without the application id; a task
prefixes them with ``<application_id>-`` when it runs, as Kafka Streams does.

Global stores (:meth:`Topology.add_global_store`) stand apart: each has a source reading
every partition of its topic and one processor that updates the store, together the
*global sub-topology*, which generates no tasks. Its host runs it once per process (see
``TaskExecutor``'s ``GLOBAL``) and hands the stores to every task, read-only; a processor
connected to a global store is therefore not joined to anything by that store.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ._codec import APP_DEFAULT, missing_sink_serdes
from ._describe import TopologyDescription, describe
from ._errors import TopologyError
from ._nodes import Node, ProcessorNode, SinkNode, SourceNode, Subtopology
from ._processor import ProcessorSupplier
from ._protocols import (
    Deserializer,
    Serializer,
    StateStore,
    StoreBuilder,
    StreamPartitioner,
    TimestampExtractor,
    TopicNameExtractor,
)


@dataclass
class _Graph:
    nodes: dict[str, Node] = field(default_factory=dict)
    children: dict[str, list[str]] = field(default_factory=dict)
    stores: dict[str, StoreBuilder[StateStore]] = field(default_factory=dict)
    node_stores: dict[str, list[str]] = field(default_factory=dict)
    topic_owner: dict[str, str] = field(default_factory=dict)
    internal_topics: dict[str, int | None] = field(default_factory=dict)
    global_nodes: list[str] = field(default_factory=list)
    global_stores: list[str] = field(default_factory=list)


class Topology:
    """A graph of source, processor and sink nodes plus their state stores.

    Every ``add_*`` method returns the topology so calls chain, as in Kafka Streams.
    """

    APP_DEFAULT = APP_DEFAULT
    """A sink serializer meaning "the configured default serde": with no default the
    topology cannot run (:meth:`check_sink_serdes`). The DSL gives it to ``to()`` sides
    the program computed; a sink serializer left ``None`` uses the default too, and
    without one passes bytes only."""

    def __init__(self) -> None:
        self._g = _Graph()

    # -- building -----------------------------------------------------------------------

    def add_source(
        self,
        name: str,
        *topics: str,
        pattern: str | re.Pattern[str] | None = None,
        key_deserializer: Deserializer | None = None,
        value_deserializer: Deserializer | None = None,
        timestamp_extractor: TimestampExtractor | None = None,
        deserialization_handler: Any = None,
    ) -> Topology:
        """Add a source reading ``topics`` (or every topic matching ``pattern``).

        A deserializer left ``None`` means the task's configured default, and that in
        turn defaults to passing bytes through unchanged.
        """
        self._check_new_name(name)
        if bool(topics) == (pattern is not None):
            raise TopologyError(f"source {name!r} needs either topics or a pattern, not both")
        for topic in topics:
            owner = self._g.topic_owner.get(topic)
            if owner is not None:
                raise TopologyError(f"topic {topic!r} is already read by source {owner!r}")
        compiled = re.compile(pattern) if isinstance(pattern, str) else pattern
        for topic in topics:
            self._g.topic_owner[topic] = name
        self._add(
            SourceNode(
                name,
                tuple(topics),
                compiled,
                key_deserializer,
                value_deserializer,
                timestamp_extractor,
                deserialization_handler,
            )
        )
        return self

    def add_processor(self, name: str, supplier: ProcessorSupplier, *parent_names: str) -> Topology:
        """Add a processor fed by ``parent_names``; ``supplier()`` is called once per task."""
        self._check_new_name(name)
        self._check_parents(name, parent_names)
        self._add(ProcessorNode(name, supplier, tuple(parent_names)))
        return self

    def add_sink(
        self,
        name: str,
        topic: str | TopicNameExtractor,
        *parent_names: str,
        key_serializer: Serializer | None = None,
        value_serializer: Serializer | None = None,
        partitioner: StreamPartitioner | None = None,
    ) -> Topology:
        """Add a sink writing to ``topic``, or to ``topic(key, value, timestamp)`` per record."""
        self._check_new_name(name)
        self._check_parents(name, parent_names)
        fixed = topic if isinstance(topic, str) else None
        extractor = None if isinstance(topic, str) else topic
        self._add(
            SinkNode(
                name,
                fixed,
                extractor,
                key_serializer,
                value_serializer,
                partitioner,
                tuple(parent_names),
            )
        )
        return self

    def add_state_store(
        self, store_builder: StoreBuilder[StateStore], *processor_names: str
    ) -> Topology:
        """Register a store and connect it to ``processor_names`` (more may connect later)."""
        name = store_builder.name
        if name in self._g.stores:
            raise TopologyError(f"state store {name!r} is already added")
        self._g.stores[name] = store_builder
        self._connect(processor_names, name)
        return self

    def connect_processor_and_state_stores(
        self, processor_name: str, *store_names: str
    ) -> Topology:
        """Give ``processor_name`` access to the named, already added stores."""
        self._connect((processor_name,), *store_names)
        return self

    def _connect(self, processor_names: Iterable[str], *store_names: str) -> None:
        for processor_name in processor_names:
            node = self._g.nodes.get(processor_name)
            if not isinstance(node, ProcessorNode):
                raise TopologyError(f"{processor_name!r} is not a processor of this topology")
            for store in store_names:
                if store not in self._g.stores:
                    raise TopologyError(f"state store {store!r} is not added to the topology")
                connected = self._g.node_stores.setdefault(processor_name, [])
                if store not in connected:
                    connected.append(store)

    def add_global_store(
        self,
        store_builder: StoreBuilder[StateStore],
        source_name: str,
        topic: str,
        processor_name: str,
        state_update_supplier: ProcessorSupplier,
        *,
        key_deserializer: Deserializer | None = None,
        value_deserializer: Deserializer | None = None,
        timestamp_extractor: TimestampExtractor | None = None,
    ) -> Topology:
        """Add a global store, kept whole in every process: ``source_name`` reads all of
        ``topic`` and ``state_update_supplier()`` writes each record into the store.

        The topic is the store's changelog, so the store must not log changes itself.
        """
        if getattr(store_builder, "logging_enabled", False):
            raise TopologyError(
                f"global store {store_builder.name!r} must have logging disabled: its "
                "source topic is its changelog"
            )
        self.add_source(
            source_name,
            topic,
            key_deserializer=key_deserializer,
            value_deserializer=value_deserializer,
            timestamp_extractor=timestamp_extractor,
        )
        self.add_processor(processor_name, state_update_supplier, source_name)
        self.add_state_store(store_builder, processor_name)
        self._g.global_nodes.extend((source_name, processor_name))
        self._g.global_stores.append(store_builder.name)
        return self

    def add_internal_topic(self, topic: str, partitions: int | None = None) -> Topology:
        """Mark ``topic`` as internal: tasks prefix it with the application id.

        ``partitions`` is the count to create it with; ``None`` lets the runtime match the
        partition count of the topics feeding it.
        """
        self._g.internal_topics[topic] = partitions
        return self

    # -- reading ------------------------------------------------------------------------

    @property
    def nodes(self) -> Mapping[str, Node]:
        return self._g.nodes

    def children(self, name: str) -> tuple[str, ...]:
        return tuple(self._g.children.get(name, ()))

    def stores_of(self, name: str) -> tuple[str, ...]:
        return tuple(self._g.node_stores.get(name, ()))

    def store_builder(self, name: str) -> StoreBuilder[StateStore]:
        return self._g.stores[name]

    @property
    def internal_topics(self) -> Mapping[str, int | None]:
        """Internal topics (unprefixed) and the partition count each should have."""
        return dict(self._g.internal_topics)

    @property
    def global_stores(self) -> tuple[str, ...]:
        """Names of the global stores, in the order they were added."""
        return tuple(self._g.global_stores)

    def global_subtopology(self) -> Subtopology | None:
        """The sources, processors and stores of every global store (id ``-1``), or
        ``None`` when the topology has none."""
        g = self._g
        if not g.global_nodes:
            return None
        sources = [n for n in (g.nodes[m] for m in g.global_nodes) if isinstance(n, SourceNode)]
        return Subtopology(
            id=-1,
            nodes=tuple(g.global_nodes),
            source_topics=tuple(t for s in sources for t in s.topics),
            source_patterns=(),
            stores=tuple(g.global_stores),
        )

    def topic_name(self, topic: str, application_id: str) -> str:
        """The topic's name on the broker: internal topics carry the application id."""
        return f"{application_id}-{topic}" if topic in self._g.internal_topics else topic

    def subtopologies(self) -> list[Subtopology]:
        """The connected parts of the graph, numbered by the position of their first node.

        Global stores and their nodes belong to none of them (see the module docstring).
        """
        global_nodes = set(self._g.global_nodes)
        global_stores = set(self._g.global_stores)
        parent: dict[str, str] = {n: n for n in self._g.nodes if n not in global_nodes}

        def find(n: str) -> str:
            while parent[n] != n:
                parent[n] = parent[parent[n]]
                n = parent[n]
            return n

        def union(a: str, b: str) -> None:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[rb] = ra

        for node in self._g.nodes.values():
            if not isinstance(node, SourceNode) and node.name not in global_nodes:
                for p in node.parents:
                    union(p, node.name)
        store_users: dict[str, str] = {}
        for node_name, connected in self._g.node_stores.items():
            if node_name in global_nodes:
                continue
            for store in connected:
                if store in global_stores:
                    continue
                if store in store_users:
                    union(store_users[store], node_name)
                else:
                    store_users[store] = node_name

        groups: dict[str, list[str]] = {}
        for name in parent:
            groups.setdefault(find(name), []).append(name)
        result = []
        for index, members in enumerate(groups.values()):
            sources = [n for n in (self._g.nodes[m] for m in members) if isinstance(n, SourceNode)]
            stores: list[str] = []
            for m in members:
                for s in self._g.node_stores.get(m, ()):
                    if s not in stores and s not in global_stores:
                        stores.append(s)
            result.append(
                Subtopology(
                    id=index,
                    nodes=tuple(members),
                    source_topics=tuple(t for s in sources for t in s.topics),
                    source_patterns=tuple(s.pattern for s in sources if s.pattern is not None),
                    stores=tuple(stores),
                )
            )
        return result

    def check_sink_serdes(self, default_key_serde: Any, default_value_serde: Any) -> None:
        """Raise :class:`TopologyError` naming every sink side that is :attr:`APP_DEFAULT`
        while the default it needs is ``None``; the App runs this at start and the test
        driver when it opens, so such a program fails before its first record."""
        sinks = [
            (
                n.name,
                repr(n.topic) if n.topic is not None else "chosen per record",
                n.key_serializer,
                n.value_serializer,
            )
            for n in self._g.nodes.values()
            if isinstance(n, SinkNode)
        ]
        missing = missing_sink_serdes(sinks, default_key_serde, default_value_serde)
        if missing:
            raise TopologyError("; ".join(missing))

    def describe(self) -> TopologyDescription:
        """The Kafka Streams style description; ``str()`` of it prints the familiar text."""
        return describe(self.subtopologies(), self._g.nodes, self._g.children, self._g.node_stores)

    # -- internals ----------------------------------------------------------------------

    def _add(self, node: Node) -> None:
        self._g.nodes[node.name] = node
        self._g.children[node.name] = []
        if not isinstance(node, SourceNode):
            for p in node.parents:
                self._g.children[p].append(node.name)

    def _check_new_name(self, name: str) -> None:
        if not name:
            raise TopologyError("a node name must not be empty")
        if name in self._g.nodes:
            raise TopologyError(f"a node named {name!r} is already added")

    def _check_parents(self, name: str, parents: tuple[str, ...]) -> None:
        if not parents:
            raise TopologyError(f"node {name!r} needs at least one parent")
        for p in parents:
            node = self._g.nodes.get(p)
            if node is None:
                raise TopologyError(f"parent {p!r} of {name!r} is not added yet")
            if isinstance(node, SinkNode):
                raise TopologyError(f"sink {p!r} cannot be the parent of {name!r}")
            if p == name:
                raise TopologyError(f"node {name!r} cannot be its own parent")

"""StreamsBuilder: where a DSL program starts and how it becomes a Topology."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from headrace.streams import StateStore, StoreBuilder, TimestampExtractor, Topology, TopologyError

from ._copartition import CopartitionGroup
from ._errors import TopologyBuildError
from ._graph import GraphNode, SourceGraphNode, TableGraphNode
from ._late import LateRecords
from ._materialized import Materialized
from ._serde_roles import source_side
from ._serde_types import Reads
from ._type_vars import K, V

if TYPE_CHECKING:
    from ._global_table import GlobalKTable
    from ._kstream import KStream
    from ._ktable import KTable


class StreamsBuilder:
    """Collects the logical graph of a DSL program; :meth:`build` compiles it.

    Generated names follow Kafka Streams (``KSTREAM-FILTER-0000000001``): a prefix and
    a counter shared by all operators of the builder, so a program built twice gets the
    same names, and passing ``name=`` to an operator pins a name across code changes.
    """

    def __init__(self) -> None:
        self._nodes: list[GraphNode] = []
        self._stores: list[StoreBuilder[StateStore]] = []
        self._copartitioned: list[CopartitionGroup] = []
        self._index = 0
        self.late_records = LateRecords()
        """Records the windowed operators of this program dropped as late, per operator."""

    def stream(
        self,
        topics: str | Iterable[str] | re.Pattern[str],
        *,
        key_serde: Reads[K] | None = None,
        value_serde: Reads[V] | None = None,
        timestamp_extractor: TimestampExtractor | None = None,
        on_deserialization_error: Any = None,
        name: str | None = None,
    ) -> KStream[K, V]:
        """A stream of the records of ``topics`` (a name, several names, or a pattern).

        ``on_deserialization_error`` overrides the application's handler for this source:
        ``streams.LogAndFailHandler()`` (the default), ``LogAndContinueHandler()`` or
        ``DeadLetterQueueHandler(topic)``.
        """
        from ._kstream import KStream

        if isinstance(topics, re.Pattern):
            names: tuple[str, ...] = ()
            pattern: re.Pattern[str] | None = topics
        else:
            names = (topics,) if isinstance(topics, str) else tuple(topics)
            pattern = None
            if not names:
                raise TopologyBuildError("stream() needs at least one topic")
        node = SourceGraphNode(
            name or self.new_name("KSTREAM-SOURCE-"),
            topics=names,
            pattern=pattern,
            key_serde=key_serde,
            value_serde=value_serde,
            timestamp_extractor=timestamp_extractor,
            deserialization_handler=on_deserialization_error,
        )
        self.add_node(node)
        return KStream(
            self, node, source_side(key_serde), source_side(value_serde), repartition_required=False
        )

    def table(
        self,
        topic: str,
        *,
        key_serde: Reads[K] | None = None,
        value_serde: Reads[V] | None = None,
        materialized: Materialized | None = None,
        timestamp_extractor: TimestampExtractor | None = None,
        on_deserialization_error: Any = None,
        name: str | None = None,
    ) -> KTable[K, V]:
        """The table whose rows are the latest value per key of ``topic``; ``None`` deletes.

        It is kept in a key-value store (``materialized``, or one named
        ``<topic>-STATE-STORE-<n>``), cached and changelogged by default.
        """
        from ._ktable import KTable
        from ._versioned_table import table_source_parts

        source = SourceGraphNode(
            self.new_name("KSTREAM-SOURCE-"),
            topics=(topic,),
            key_serde=key_serde,
            value_serde=value_serde,
            timestamp_extractor=timestamp_extractor,
            deserialization_handler=on_deserialization_error,
        )
        self.add_node(source)
        store = (materialized or Materialized()).resolve(
            self.new_name(f"{topic}-STATE-STORE-"), source_side(key_serde), source_side(value_serde)
        )
        parts = table_source_parts(store)
        node = TableGraphNode(
            name or self.new_name("KTABLE-SOURCE-"),
            (source,),
            store_builders=(parts.store_builder,),
        )
        node.supplier = parts.processor(node)
        self.add_node(node)
        return KTable(
            self,
            node,
            store.key_serde,
            store.value_serde,
            store_name=store.store_name,
            getter=parts.getter,
        )

    def global_table(
        self,
        topic: str,
        *,
        key_serde: Reads[K] | None = None,
        value_serde: Reads[V] | None = None,
        materialized: Materialized | None = None,
        timestamp_extractor: TimestampExtractor | None = None,
        name: str | None = None,
    ) -> GlobalKTable[K, V]:
        """The table of ``topic``, whole in every process: every partition is read into a
        key-value store (``materialized``, or ``<topic>-STATE-STORE-<n>``), which logs
        nothing (the topic is its changelog) and is not cached."""
        from ._global_table import GlobalKTable, GlobalStoreGraphNode

        store = (
            (materialized or Materialized())
            .resolve(
                self.new_name(f"{topic}-STATE-STORE-"),
                source_side(key_serde),
                source_side(value_serde),
            )
            .with_logging_disabled()
            .with_caching_disabled()
        )
        node = GlobalStoreGraphNode(
            name or self.new_name("KTABLE-SOURCE-"),
            topic=topic,
            store_builder=store.key_value_store(),
            key_serde=key_serde,
            value_serde=value_serde,
            timestamp_extractor=timestamp_extractor,
        )
        self.add_node(node)
        return GlobalKTable(self, node, store.key_serde, store.value_serde, store.store_name)

    def add_state_store(self, store_builder: StoreBuilder[StateStore]) -> StreamsBuilder:
        """Add a store that ``KStream.process(..., store_name)`` can then connect to."""
        self._stores.append(store_builder)
        return self

    def build(self) -> Topology:
        """Write the logical graph into a fresh Topology: stores first, then every node."""
        self._check_suppressed_readers()
        for group in self._copartitioned:
            group.check()
        topology = Topology()
        try:
            for store in self._stores:
                topology.add_state_store(store)
            for node in self._nodes:
                node.write_to_topology(topology)
        except TopologyError as exc:
            raise TopologyBuildError(str(exc)) from exc
        return topology

    def _check_suppressed_readers(self) -> None:
        """A suppressed aggregation emits final results only, to every reader; refuse a
        program in which something other than the suppress chain reads it (that reader
        would silently lose the intermediate updates it was written for)."""
        for node in self._nodes:
            if not isinstance(node, TableGraphNode) or node.suppressed_via is None:
                continue
            allowed = set(map(id, node.suppressed_via))
            watched = [node, *node.suppressed_via[:-1]]
            watched_ids = set(map(id, watched))
            for reader in self._nodes:
                if id(reader) in allowed:
                    continue
                if any(id(p) in watched_ids for p in reader.parents):
                    raise TopologyBuildError(
                        f"{reader.name} reads the updates of {node.name}, whose results are "
                        "suppressed to final ones; aggregate twice to read both"
                    )

    def copartition_groups(self) -> list[tuple[str, tuple[str, ...]]]:
        """Per join that needs it, the topics (internal ones without the application id)
        that must have equal partition counts: ``[(join name, topics), ...]``."""
        return [(g.join, g.topics()) for g in self._copartitioned]

    # -- used by the operators ----------------------------------------------------------

    def add_copartition_group(self, group: CopartitionGroup) -> None:
        self._copartitioned.append(group)

    def new_name(self, prefix: str) -> str:
        name = f"{prefix}{self._index:010d}"
        self._index += 1
        return name

    def add_node(self, node: GraphNode) -> GraphNode:
        self._nodes.append(node)
        return node

"""Co-partitioning: the records a join pairs up must meet in one task.

A join reads both sides by key in one task, so both sides must be partitioned alike:
the same partition count and the same key-to-partition mapping. The builder sees to
the second part: a side whose key may have changed upstream (``select_key``, ``map``,
``flat_map``, ``process``, ``group_by``) is written to a repartition topic first,
``<application_id>-<join name>-left-repartition`` (or ``-right-``), and read back
partitioned by its new key. The first part needs partition counts, which only the
broker knows: the builder records which topics each join needs co-partitioned
(:meth:`StreamsBuilder.copartition_groups`), and the runtime checks the counts at
start, before anything is consumed.

What the builder can refuse by itself, at ``build()``: a side read through a pattern
subscription (its topics are unknown, so nothing can be checked), and two
repartitioned sides that were given different partition counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import _operators as ops
from ._errors import TopologyBuildError
from ._graph import GraphNode, RepartitionGraphNode, SourceGraphNode

if TYPE_CHECKING:
    from ._kstream import KStream


def side_input(stream: KStream, name: str, key_serde: Any, value_serde: Any) -> GraphNode:
    """The node a join reads ``stream`` from: the stream itself, or a repartition named
    ``name`` when its key may have changed."""
    if not stream.repartition_required:
        return stream._node
    node = RepartitionGraphNode(
        name,
        (stream._node,),
        key_serde=key_serde,
        value_serde=value_serde,
        filter_supplier=lambda: ops.Transform(ops.drop_null_keys),
    )
    stream._builder.add_node(node)
    return node


@dataclass(frozen=True)
class CopartitionGroup:
    """The inputs of one join that must be co-partitioned."""

    join: str
    inputs: tuple[GraphNode, ...]

    def topics(self) -> tuple[str, ...]:
        """Topics (internal ones unprefixed) the inputs are read from, in input order."""
        out: list[str] = []
        for node in self.inputs:
            for topic in _feeding_topics(node):
                if topic not in out:
                    out.append(topic)
        return tuple(out)

    def check(self) -> None:
        """Refuse what can be seen to be wrong before any partition count is known."""
        counts: dict[str, int] = {}
        for node in self.inputs:
            for source in _feeding_nodes(node):
                if isinstance(source, SourceGraphNode) and source.pattern is not None:
                    raise TopologyBuildError(
                        f"join {self.join} reads {source.name} through a pattern "
                        "subscription, so its co-partitioning cannot be checked"
                    )
                if isinstance(source, RepartitionGraphNode) and source.partitions is not None:
                    counts[source.topic] = source.partitions
        if len(set(counts.values())) > 1:
            raise TopologyBuildError(
                f"join {self.join} needs co-partitioned inputs, but its repartition topics "
                f"were given different partition counts: {counts}"
            )


def _feeding_nodes(node: GraphNode) -> list[GraphNode]:
    """The sources and repartitions whose records reach ``node`` without passing
    another repartition: the topics that decide its partitioning."""
    found: list[GraphNode] = []
    seen: set[int] = set()
    todo = [node]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, SourceGraphNode | RepartitionGraphNode):
            found.append(current)
            continue
        todo.extend(current.parents)
    return found


def _feeding_topics(node: GraphNode) -> list[str]:
    topics: list[str] = []
    for source in _feeding_nodes(node):
        if isinstance(source, RepartitionGraphNode):
            topics.append(source.topic)
        elif isinstance(source, SourceGraphNode):
            topics.extend(source.topics)
    return topics

"""``Topology.describe()``: the structure as data, printed the way Kafka Streams prints it.

The text form matches Kafka's ``TopologyDescription.toString()`` so that a description
from a Java application and one from here can be compared line by line::

    Topologies:
       Sub-topology: 0
        Source: KSTREAM-SOURCE-0000000000 (topics: [input])
          --> KSTREAM-FILTER-0000000001
        Processor: KSTREAM-FILTER-0000000001 (stores: [])
          --> KSTREAM-SINK-0000000002
          <-- KSTREAM-SOURCE-0000000000
        Sink: KSTREAM-SINK-0000000002 (topic: output)
          <-- KSTREAM-FILTER-0000000001
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ._nodes import Node, ProcessorNode, SinkNode, SourceNode, Subtopology


@dataclass(frozen=True)
class NodeDescription:
    """One node: its kind, name, neighbours, and what it reads, writes or keeps."""

    kind: str  # "Source", "Processor" or "Sink"
    name: str
    successors: tuple[str, ...]
    predecessors: tuple[str, ...]
    topics: tuple[str, ...] = ()
    topic_pattern: str | None = None
    stores: tuple[str, ...] = ()
    topic_extractor: str | None = None

    def __str__(self) -> str:
        if self.kind == "Source":
            what = self.topic_pattern if self.topic_pattern is not None else _java_list(self.topics)
            return f"Source: {self.name} (topics: {what})\n      --> {_names(self.successors)}"
        if self.kind == "Processor":
            return (
                f"Processor: {self.name} (stores: {_java_list(self.stores)})\n"
                f"      --> {_names(self.successors)}\n"
                f"      <-- {_names(self.predecessors)}"
            )
        target = (
            f"topic: {self.topics[0]}"
            if self.topics
            else f"extractor class: {self.topic_extractor}"
        )
        return f"Sink: {self.name} ({target})\n      <-- {_names(self.predecessors)}"


@dataclass(frozen=True)
class SubtopologyDescription:
    id: int
    nodes: tuple[NodeDescription, ...]

    def __str__(self) -> str:
        body = "".join(f"    {node}\n" for node in self.nodes)
        return f"Sub-topology: {self.id}\n{body}\n"


@dataclass(frozen=True)
class TopologyDescription:
    subtopologies: tuple[SubtopologyDescription, ...]

    def __str__(self) -> str:
        return "Topologies:\n " + "".join(f"  {s}" for s in self.subtopologies)


def describe(
    subtopologies: Sequence[Subtopology],
    nodes: Mapping[str, Node],
    children: Mapping[str, Sequence[str]],
    node_stores: Mapping[str, Sequence[str]],
) -> TopologyDescription:
    """Describe each sub-topology, sources first, then the rest in topological order."""
    result = []
    for sub in subtopologies:
        members = [nodes[n] for n in sub.nodes]
        ordered = [n for n in members if isinstance(n, SourceNode)] + [
            n for n in members if not isinstance(n, SourceNode)
        ]
        result.append(
            SubtopologyDescription(
                sub.id, tuple(_describe_node(n, children, node_stores) for n in ordered)
            )
        )
    return TopologyDescription(tuple(result))


def _describe_node(
    node: Node, children: Mapping[str, Sequence[str]], node_stores: Mapping[str, Sequence[str]]
) -> NodeDescription:
    successors = tuple(sorted(children.get(node.name, ())))
    if isinstance(node, SourceNode):
        return NodeDescription(
            "Source",
            node.name,
            successors,
            (),
            topics=node.topics,
            topic_pattern=node.pattern.pattern if node.pattern is not None else None,
        )
    predecessors = tuple(sorted(node.parents))
    if isinstance(node, ProcessorNode):
        return NodeDescription(
            "Processor",
            node.name,
            successors,
            predecessors,
            stores=tuple(node_stores.get(node.name, ())),
        )
    assert isinstance(node, SinkNode)
    extractor = node.topic_extractor
    return NodeDescription(
        "Sink",
        node.name,
        (),
        predecessors,
        topics=(node.topic,) if node.topic is not None else (),
        topic_extractor=None
        if extractor is None
        else getattr(extractor, "__qualname__", repr(extractor)),
    )


def _names(names: Sequence[str]) -> str:
    return ", ".join(names) if names else "none"


def _java_list(items: Sequence[str]) -> str:
    return "[" + ", ".join(items) + "]"

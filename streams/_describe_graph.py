"""A topology's description drawn as a graph: a Mermaid flowchart or a Graphviz dot graph.

Each sub-topology is a subgraph of its processor nodes; topics and stores are nodes
outside them, so a repartition topic written by one sub-topology and read by another
is one node that links the two. Node ids are generated (``n0``, ``t0``, ``s0``) and names
are labels only, since topic and node names may hold characters neither language allows
in an id.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ._describe import TopologyDescription


@dataclass
class _Graph:
    """The nodes and edges both languages draw, with their ids."""

    subgraphs: list[tuple[int, list[tuple[str, str]]]] = field(default_factory=list)
    topics: dict[str, str] = field(default_factory=dict)  # label -> id
    stores: dict[str, str] = field(default_factory=dict)
    edges: list[tuple[str, str]] = field(default_factory=list)
    store_edges: list[tuple[str, str]] = field(default_factory=list)


def _graph(description: TopologyDescription) -> _Graph:
    graph = _Graph()
    node_ids: dict[str, str] = {}
    for sub in description.subtopologies:
        members = []
        for node in sub.nodes:
            node_ids[node.name] = f"n{len(node_ids)}"
            members.append((node_ids[node.name], node.name))
        graph.subgraphs.append((sub.id, members))

    def topic(label: str) -> str:
        return graph.topics.setdefault(label, f"t{len(graph.topics)}")

    for sub in description.subtopologies:
        for node in sub.nodes:
            me = node_ids[node.name]
            written = node.topics or ((node.topic_extractor,) if node.topic_extractor else ())
            if node.kind == "Source":
                read = (node.topic_pattern,) if node.topic_pattern is not None else node.topics
                graph.edges += [(topic(t), me) for t in read]
            elif node.kind == "Sink":
                graph.edges += [(me, topic(t)) for t in written]
            graph.edges += [(me, node_ids[s]) for s in node.successors]
            for store in node.stores:
                store_id = graph.stores.setdefault(store, f"s{len(graph.stores)}")
                graph.store_edges.append((me, store_id))
    return graph


def to_mermaid(description: TopologyDescription) -> str:
    graph = _graph(description)
    lines = ["flowchart TD"]
    for sub_id, members in graph.subgraphs:
        lines.append(f'    subgraph sub{sub_id}["Sub-topology: {sub_id}"]')
        lines += [f'        {node_id}["{_mermaid_text(name)}"]' for node_id, name in members]
        lines.append("    end")
    lines += [f'    {tid}[/"{_mermaid_text(name)}"/]' for name, tid in graph.topics.items()]
    lines += [f'    {sid}[("{_mermaid_text(name)}")]' for name, sid in graph.stores.items()]
    lines += [f"    {a} --> {b}" for a, b in graph.edges]
    lines += [f"    {a} -.- {b}" for a, b in graph.store_edges]
    return "\n".join(lines) + "\n"


def to_dot(description: TopologyDescription) -> str:
    graph = _graph(description)
    lines = ["digraph topology {", "    rankdir=TB;"]
    for sub_id, members in graph.subgraphs:
        lines.append(f"    subgraph cluster_{sub_id} {{")
        lines.append(f'        label="Sub-topology: {sub_id}";')
        lines += [f'        {node_id} [label="{_dot_text(name)}"];' for node_id, name in members]
        lines.append("    }")
    lines += [
        f'    {tid} [label="{_dot_text(name)}", shape=box, style=rounded];'
        for name, tid in graph.topics.items()
    ]
    lines += [
        f'    {sid} [label="{_dot_text(name)}", shape=cylinder];'
        for name, sid in graph.stores.items()
    ]
    lines += [f"    {a} -> {b};" for a, b in graph.edges]
    lines += [f"    {a} -> {b} [style=dashed, arrowhead=none];" for a, b in graph.store_edges]
    lines.append("}")
    return "\n".join(lines) + "\n"


def _mermaid_text(text: str) -> str:
    return text.replace('"', "#quot;")


def _dot_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')

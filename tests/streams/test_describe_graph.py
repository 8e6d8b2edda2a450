"""``headrace describe --format mermaid|dot`` draws every node, topic and store of the
text description, and every edge: successors, topics read and written, stores kept.
The dot output is laid out by Graphviz's own ``dot``; the Mermaid output is checked for
its structure (declared ids, balanced subgraphs)."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from clirun import headrace

from headrace.streams import TopologyDescription
from headrace.streams.runtime._app import resolve_topology

TARGET = "headrace.examples.page_views:build_topology"


def _description() -> TopologyDescription:
    from headrace.examples.page_views import build_topology

    return resolve_topology(build_topology).describe()


def _expected_edges(description: TopologyDescription) -> set[tuple[str, str]]:
    """(from, to) labels of every edge the text form names; a store edge as (node, store)."""
    edges = set()
    for sub in description.subtopologies:
        for node in sub.nodes:
            edges |= {(node.name, s) for s in node.successors}
            edges |= {(node.name, store) for store in node.stores}
            if node.kind == "Source":
                edges |= {(t, node.name) for t in node.topics}
            if node.kind == "Sink":
                edges |= {(node.name, t) for t in node.topics}
    return edges


def test_the_example_has_what_the_drawing_must_show() -> None:
    description = _description()
    assert len(description.subtopologies) == 2  # linked by a repartition topic
    assert any(n.stores for s in description.subtopologies for n in s.nodes)


def test_dot_is_laid_out_by_graphviz_with_every_node_and_edge(
    capsys: pytest.CaptureFixture[str],
) -> None:
    dot = shutil.which("dot")
    assert dot is not None, "Graphviz's dot is needed (apt-get install graphviz)"
    text = headrace(capsys, "describe", TARGET, "--format", "dot").out
    subprocess.run([dot, "-Tsvg"], input=text, text=True, check=True, capture_output=True)
    plain = subprocess.run(
        [dot, "-Tplain"], input=text, text=True, check=True, capture_output=True
    ).stdout
    labels = {}
    drawn = set()
    for line in plain.splitlines():
        words = line.split()
        if words[0] == "node":
            labels[words[1]] = line.split('"')[1] if '"' in line else words[6]
        elif words[0] == "edge":
            drawn.add((words[1], words[2]))
    description = _description()
    assert {(labels[a], labels[b]) for a, b in drawn} == _expected_edges(description)
    assert text.count("subgraph cluster_") == len(description.subtopologies)


def test_mermaid_declares_every_node_once_and_draws_every_edge(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = headrace(capsys, "describe", TARGET, "--format", "mermaid").out
    lines = [line.strip() for line in text.splitlines()]
    assert lines[0] == "flowchart TD"
    description = _description()
    assert sum(line.startswith("subgraph ") for line in lines) == len(description.subtopologies)
    assert sum(line == "end" for line in lines) == len(description.subtopologies)
    labels: dict[str, str] = {}
    edges = set()
    for line in lines[1:]:
        declared = re.fullmatch(r'(\w+)(?:\[|\[/|\[\()"(.*)"(?:\]|/\]|\)\])', line)
        edge = re.fullmatch(r"(\w+) (?:-->|-\.-) (\w+)", line)
        if line.startswith("subgraph ") or line == "end":
            continue
        assert declared or edge, line
        if declared:
            assert declared[1] not in labels, f"{declared[1]} declared twice"
            labels[declared[1]] = declared[2]
        elif edge:
            edges.add((edge[1], edge[2]))
    assert all(a in labels and b in labels for a, b in edges)
    assert {(labels[a], labels[b]) for a, b in edges} == _expected_edges(description)


def test_text_stays_the_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert headrace(capsys, "describe", TARGET).out.startswith("Topologies:")

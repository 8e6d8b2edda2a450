"""An application's topology drawn as SVG, from the data of its ``/topology`` route.

Each sub-topology is a band; inside it a node's column is its depth (the longest path
to it from a source), so records flow left to right, and nodes of one column are
stacked in the order the description lists them. Sources, processors and sinks have a
colour each (the page's CSS); a node names the topics it reads or writes and the stores
it keeps.
"""

from __future__ import annotations

from html import escape
from typing import Any

NODE_W, NODE_H, GAP_X, GAP_Y, BAND_GAP, LABEL_H = 240, 46, 60, 18, 30, 24


def topology_svg(description: dict[str, Any]) -> str:
    bands, y, width = [], 0, 0
    for sub in description["subtopologies"]:
        placed = _place(sub["nodes"])
        columns = max((c for c, _ in placed.values()), default=0) + 1
        rows = max((r for _, r in placed.values()), default=0) + 1
        band_h = LABEL_H + rows * (NODE_H + GAP_Y)
        width = max(width, columns * (NODE_W + GAP_X))
        bands.append(_band(sub, placed, y))
        y += band_h + BAND_GAP
    return (
        f'<svg class="topology" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{y}" '
        f'viewBox="0 0 {width} {y}"><defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" '
        'markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z"/>'
        f"</marker></defs>{''.join(bands)}</svg>"
    )


def _place(nodes: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """name -> (column, row)."""
    by_name = {n["name"]: n for n in nodes}
    depth: dict[str, int] = {}

    def depth_of(name: str, seen: frozenset[str] = frozenset()) -> int:
        if name not in depth:
            preds = [p for p in by_name[name]["predecessors"] if p in by_name and p not in seen]
            depth[name] = 1 + max((depth_of(p, seen | {name}) for p in preds), default=-1)
        return depth[name]

    placed: dict[str, tuple[int, int]] = {}
    filled: dict[int, int] = {}
    for node in nodes:
        column = depth_of(node["name"])
        placed[node["name"]] = (column, filled.get(column, 0))
        filled[column] = filled.get(column, 0) + 1
    return placed


def _band(sub: dict[str, Any], placed: dict[str, tuple[int, int]], top: int) -> str:
    def box(name: str) -> tuple[int, int]:
        column, row = placed[name]
        return column * (NODE_W + GAP_X), top + LABEL_H + row * (NODE_H + GAP_Y)

    parts = [f'<text class="band" x="0" y="{top + 16}">Sub-topology {sub["id"]}</text>']
    for node in sub["nodes"]:
        x, y = box(node["name"])
        for successor in node["successors"]:
            if successor in placed:
                sx, sy = box(successor)
                parts.append(
                    f'<line class="edge" x1="{x + NODE_W}" y1="{y + NODE_H / 2}" '
                    f'x2="{sx}" y2="{sy + NODE_H / 2}" marker-end="url(#arrow)"/>'
                )
    for node in sub["nodes"]:
        x, y = box(node["name"])
        detail = _detail(node)
        parts.append(
            f'<g class="node {node["kind"].lower()}"><title>{escape(node["name"])}</title>'
            f'<rect x="{x}" y="{y}" width="{NODE_W}" height="{NODE_H}" rx="6"/>'
            f'<text x="{x + 8}" y="{y + 18}">{escape(_short(node["name"]))}</text>'
            f'<text class="detail" x="{x + 8}" y="{y + 36}">{escape(_short(detail, 36))}</text></g>'
        )
    return "".join(parts)


def _detail(node: dict[str, Any]) -> str:
    if node["topics"]:
        return ("reads " if node["kind"] == "Source" else "writes ") + ", ".join(node["topics"])
    if node.get("topic_pattern"):
        return f"reads /{node['topic_pattern']}/"
    if node["stores"]:
        return "stores " + ", ".join(node["stores"])
    return str(node["kind"]).lower()


def _short(name: str, limit: int = 30) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"

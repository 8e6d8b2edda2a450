"""An application's topology drawn as SVG, from the data of its ``/topology`` route.

Each sub-topology is a band; inside it a node's column is its depth (the longest path
to it from a source), so records flow left to right, and nodes of one column are
stacked in the order the description lists them. Sources, processors and sinks have a
colour each (the page's CSS); a node names the topics it reads or writes.

What joins the bands is drawn too, since that is what a reader of a topology with a
repartition or a join looks for:

- a topic one sub-topology writes and another reads (a repartition topic, or any topic
  both ends of which are in the application) is a dashed curve from the sink to the
  source, labelled with the topic;
- a state store (the table a join looks up, an aggregate's store) is a box of its own
  below the first band that uses it, with a dotted line to every processor using it,
  in whichever band that processor is.

Sizes are fixed in pixels and the page scrolls a wide drawing rather than shrinking it,
so the text stays readable in a 1,400 px window.
"""

from __future__ import annotations

from html import escape
from typing import Any

from ._html import Markup

NODE_W, NODE_H, GAP_X, GAP_Y, BAND_GAP, LABEL_H, STORE_H = 200, 46, 72, 16, 36, 24, 30
MARGIN = 28  # room at the left for the links that enter a first column
Box = tuple[float, float, float, float]  # x, y, width, height


def topology_svg(description: dict[str, Any]) -> Markup:
    boxes: dict[tuple[str, str], Box] = {}  # ("node" | "store", name) -> box
    band_of: dict[str, tuple[float, float]] = {}  # node -> its band's top and bottom
    bands: list[str] = []
    y, width = BAND_GAP / 2, 0  # a gap above the first band too, for the links there
    placed_stores: set[str] = set()
    for sub in description["subtopologies"]:
        placed = _place(sub["nodes"])
        columns = max((c for c, _ in placed.values()), default=0) + 1
        rows = max((r for _, r in placed.values()), default=0) + 1
        top = y + LABEL_H
        for name, (column, row) in placed.items():
            boxes[("node", name)] = (
                MARGIN + column * (NODE_W + GAP_X),
                top + row * (NODE_H + GAP_Y),
                NODE_W,
                NODE_H,
            )
        height = LABEL_H + rows * (NODE_H + GAP_Y)
        stores = _stores_first_used_here(sub, placed, placed_stores)
        for column, store in stores:
            boxes[("store", store)] = (
                MARGIN + column * (NODE_W + GAP_X),
                y + height,
                NODE_W,
                STORE_H,
            )
        if stores:
            height += STORE_H + GAP_Y
            columns = max(columns, max(c for c, _ in stores) + 1)
        width = max(width, MARGIN * 2 + columns * (NODE_W + GAP_X))
        band_of.update({name: (y, y + height) for name in placed})
        bands.append(
            f'<rect class="band" x="2" y="{y + 2:g}" width="{{width}}" height="{height - 4:g}" rx="8"/>'
            f'<text class="band" x="{MARGIN}" y="{y + 17:g}">Sub-topology {escape(str(sub["id"]))}</text>'
        )
        y += height + BAND_GAP
    nodes = [n for sub in description["subtopologies"] for n in sub["nodes"]]
    parts = [band.replace("{width}", str(width - 4)) for band in bands]
    parts += _flow_edges(nodes, boxes)
    parts += _store_links(nodes, boxes)
    parts += _topic_links(nodes, boxes, band_of)
    parts += [_node(n, boxes[("node", n["name"])]) for n in nodes]
    parts += [_store(name, box) for (kind, name), box in boxes.items() if kind == "store"]
    return Markup(
        '<div class="topology-scroll">'
        f'<svg class="topology" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{y - BAND_GAP / 2:g}" viewBox="0 0 {width} {y - BAND_GAP / 2:g}"><defs><marker id="arrow" viewBox="0 0 10 10" refX="10" '
        'refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M 0 0 L 10 5 L 0 10 z"/></marker></defs>'
        f"{''.join(parts)}</svg></div>"
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


def _stores_first_used_here(
    sub: dict[str, Any], placed: dict[str, tuple[int, int]], done: set[str]
) -> list[tuple[int, str]]:
    """(column, store) for the stores this band is the first to use: each under the
    leftmost node using it, moved right when that place is taken."""
    taken: set[int] = set()
    out = []
    for node in sorted(sub["nodes"], key=lambda n: placed[n["name"]]):
        for store in node["stores"]:
            if store in done:
                continue
            done.add(store)
            column = placed[node["name"]][0]
            while column in taken:
                column += 1
            taken.add(column)
            out.append((column, store))
    return out


def _flow_edges(nodes: list[dict[str, Any]], boxes: dict[tuple[str, str], Box]) -> list[str]:
    edges = []
    for node in nodes:
        x, y, w, h = boxes[("node", node["name"])]
        for successor in node["successors"]:
            if ("node", successor) in boxes:
                sx, sy, _, sh = boxes[("node", successor)]
                edges.append(
                    f'<line class="edge" x1="{x + w:g}" y1="{y + h / 2:g}" '
                    f'x2="{sx:g}" y2="{sy + sh / 2:g}" marker-end="url(#arrow)"/>'
                )
    return edges


def _store_links(nodes: list[dict[str, Any]], boxes: dict[tuple[str, str], Box]) -> list[str]:
    """A dotted line from a store to each node using it, run along the gaps between
    columns so that it crosses no node."""
    links = []
    for k, (node, store) in enumerate((n, s) for n in nodes for s in n["stores"]):
        x, y, w, h = boxes[("node", node["name"])]
        sx, sy, sw, sh = boxes[("store", store)]
        lane = 10 + 3 * (k % 5)
        if x > sx:  # the node is in a column to the right of the store
            start, gap, end = sx + sw, x - lane, x
        elif x == sx:
            start, gap, end = sx + sw, x + w + lane, x + w
        else:
            start, gap, end = sx, x + w + lane, x + w
        points = f"{start:g},{sy + sh / 2:g} {gap:g},{sy + sh / 2:g} {gap:g},{y + h - 8:g} {end:g},{y + h - 8:g}"
        links.append(
            f'<polyline class="store-link" data-store="{escape(store, quote=True)}" '
            f'data-node="{escape(node["name"], quote=True)}" points="{points}"/>'
        )
    return links


def _topic_links(
    nodes: list[dict[str, Any]],
    boxes: dict[tuple[str, str], Box],
    band_of: dict[str, tuple[float, float]],
) -> list[str]:
    """A dashed line from each sink to each source of the application reading its
    topic: out of the sink to the right, along the gap between the bands to the left
    of the source, then into it; the topic's name is written along the gap."""
    readers: dict[str, list[str]] = {}
    for node in nodes:
        if node["kind"] == "Source":
            for topic in node["topics"]:
                readers.setdefault(topic, []).append(node["name"])
    links = []
    for node in nodes:
        if node["kind"] != "Sink":
            continue
        for topic in node["topics"]:
            for reader in readers.get(topic, []):
                x, y, w, h = boxes[("node", node["name"])]
                rx, ry, _, rh = boxes[("node", reader)]
                top, bottom = band_of[node["name"]]
                gap_y = top - BAND_GAP / 2 if ry < y else bottom + BAND_GAP / 2
                out_x, in_x = x + w + 14, rx - 16
                points = (
                    f"{x + w:g},{y + h / 2:g} {out_x:g},{y + h / 2:g} {out_x:g},{gap_y:g} "
                    f"{in_x:g},{gap_y:g} {in_x:g},{ry + rh / 2:g} {rx:g},{ry + rh / 2:g}"
                )
                links.append(
                    f'<g class="topic-link" data-topic="{escape(topic, quote=True)}" '
                    f'data-from="{escape(node["name"], quote=True)}" '
                    f'data-to="{escape(reader, quote=True)}"><title>{escape(topic)}</title>'
                    f'<polyline points="{points}" marker-end="url(#arrow)"/>'
                    f'<text x="{(out_x + in_x) / 2:g}" y="{gap_y - 4:g}" text-anchor="middle">'
                    f"topic {escape(_short(topic, 48))}</text></g>"
                )
    return links


def _node(node: dict[str, Any], box: Box) -> str:
    x, y, w, h = box
    return (
        f'<g class="node {escape(node["kind"].lower(), quote=True)}" '
        f'data-name="{escape(node["name"], quote=True)}"><title>{escape(node["name"])}</title>'
        f'<rect x="{x:g}" y="{y:g}" width="{w:g}" height="{h:g}" rx="6"/>'
        f'<text x="{x + 8:g}" y="{y + 18:g}">{escape(_short(node["name"]))}</text>'
        f'<text class="detail" x="{x + 8:g}" y="{y + 36:g}">{escape(_short(_detail(node), 32))}</text></g>'
    )


def _store(name: str, box: Box) -> str:
    x, y, w, h = box
    return (
        f'<g class="store" data-name="{escape(name, quote=True)}"><title>{escape(name)}</title>'
        f'<rect x="{x:g}" y="{y:g}" width="{w:g}" height="{h:g}" rx="12"/>'
        f'<text x="{x + 10:g}" y="{y + 19:g}">▤ {escape(_short(name, 28))}</text></g>'
    )


def _detail(node: dict[str, Any]) -> str:
    if node["topics"]:
        return ("reads " if node["kind"] == "Source" else "writes ") + ", ".join(node["topics"])
    if node.get("topic_pattern"):
        return f"reads /{node['topic_pattern']}/"
    if node["stores"]:
        return "uses " + ", ".join(node["stores"])
    return str(node["kind"]).lower()


def _short(name: str, limit: int = 27) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"

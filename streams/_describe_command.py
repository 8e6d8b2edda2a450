"""``headrace describe path/to/app.py:app``: print a topology's ``describe()``.

The target is named as for ``headrace run`` (``file.py:NAME`` or ``module:NAME``: an App,
a Topology, a StreamsBuilder, or a function returning one of them). Nothing connects to
a broker: the topology is built and described, so its sub-topologies, sources, stores
and sinks can be read before it runs.
"""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    describe = subparsers.add_parser(
        "describe", help="print the sub-topologies, sources, stores and sinks of a topology"
    )
    describe.add_argument("target", help="path/to/app.py:NAME or package.module:NAME")
    describe.add_argument(
        "--format",
        choices=("text", "mermaid", "dot"),
        default="text",
        help="text as Kafka Streams' describe(), a Mermaid flowchart or a Graphviz dot graph"
        " (default: %(default)s)",
    )
    describe.set_defaults(handler=_describe)


def _describe(args: argparse.Namespace) -> int:
    from ._commands import load_target
    from .runtime import App
    from .runtime._app import resolve_topology

    obj = load_target(args.target)
    source = obj._topology_source if isinstance(obj, App) else obj
    description = resolve_topology(source).describe()
    if args.format == "text":
        print(description)
    else:
        from ._describe_graph import to_dot, to_mermaid

        draw = to_mermaid if args.format == "mermaid" else to_dot
        print(draw(description), end="")
    return 0

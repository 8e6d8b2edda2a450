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
    describe.set_defaults(handler=_describe)


def _describe(args: argparse.Namespace) -> int:
    from ._commands import load_target
    from .runtime import App
    from .runtime._app import resolve_topology

    obj = load_target(args.target)
    source = obj._topology_source if isinstance(obj, App) else obj
    print(resolve_topology(source).describe())
    return 0

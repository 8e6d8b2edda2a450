"""Where a topic dump ends and how far it has come (``headrace consume --until-end``,
``--max-messages``, and the progress bar).

``--until-end`` stops at the end each partition had when reading began (its last stable
offset under ``read_committed``): what was there is dumped, what arrives later is not,
as ``kcat -e`` does. Progress is drawn on stderr only when stderr is a terminal and the
records go elsewhere (a file, a pipe), so neither output garbles the other and piped
output carries no bar; its total is known once the dump is bounded.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from headrace.base.progress import ProgressBar, terminal_bar


def dump_bar(args: argparse.Namespace) -> ProgressBar | None:
    """The dump's bar, or None: no bar asked for, or nobody watching it."""
    if args.no_progress or sys.stdout.isatty():
        return None
    return terminal_bar(args.max_messages, label=f"{args.topic} ")


class EndWatch:
    """The ends of a topic's partitions when the dump began, and whether the consumer's
    positions have reached them."""

    def __init__(self, ends: dict[Any, int]) -> None:
        self.ends = ends
        self.left: int | None = None  # records to the end, once the assignment is known
        self.bounded = False  # whether a bar has been given its total

    @classmethod
    async def of(cls, consumer: Any, topic: str, partitions: set[int]) -> EndWatch:
        from aiokafka import TopicPartition

        tps = [TopicPartition(topic, p) for p in sorted(partitions)]
        return cls(dict(await consumer.end_offsets(tps)))

    async def reached(self, consumer: Any) -> bool:
        assigned = consumer.assignment()
        if not assigned:  # a group member before its first assignment
            return False
        behind = [max(0, self.ends.get(tp, 0) - await consumer.position(tp)) for tp in assigned]
        if self.left is None:
            self.left = sum(behind)
        return not any(behind)


def bound(bar: ProgressBar | None, watch: EndWatch | None, max_messages: int | None) -> None:
    """Give the bar its total once the records to the end are known: those dumped
    already and those left then (a group member learns its partitions, and so what is
    left, only with its first records)."""
    if bar is None or watch is None or watch.left is None or watch.bounded:
        return
    watch.bounded = True
    total = bar.done + watch.left
    bar.total = total if max_messages is None else min(total, max_messages)

"""Wakes long-polling fetches when data arrives on a partition they wait for."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Iterable

TopicPartition = tuple[str, int]


class AppendNotifier:
    def __init__(self) -> None:
        self._waiters: defaultdict[TopicPartition, set[asyncio.Future[None]]] = defaultdict(set)

    def notify(self, tp: TopicPartition) -> None:
        waiters = self._waiters.pop(tp, None)
        if not waiters:
            return
        for fut in waiters:
            if not fut.done():
                fut.set_result(None)

    async def wait(self, tps: Iterable[TopicPartition], within: float) -> None:
        """Return when any of ``tps`` gets data, or after ``within`` seconds."""
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        keys = list(tps)
        for tp in keys:
            self._waiters[tp].add(fut)
        try:
            await asyncio.wait_for(fut, within)
        except TimeoutError:
            pass
        finally:
            for tp in keys:
                waiting = self._waiters.get(tp)
                if waiting is not None:
                    waiting.discard(fut)
                    if not waiting:
                        del self._waiters[tp]

"""The table topics the console shows, when it knows where their tables live
(``headrace console --table-location``, or the broker's own location when the console
runs beside it).

Which topics are tables comes from the cluster (``headrace.table.mode`` by
DescribeConfigs), their end offsets from ListOffsets as the topic pages read them, and
how far each table is behind from its Delta log (``_table_lag``), read off the event
loop, one table after another so a page with many table topics does not take every core.
"""

from __future__ import annotations

import asyncio
from typing import Any

from ._cluster import TABLE_MODE, ClusterReader
from ._table_lag import TableLag, table_lag


class TablesReader:
    def __init__(self, location: str, cluster: ClusterReader) -> None:
        self.location, self._cluster = location, cluster

    async def lags(self, topics: list[dict[str, Any]]) -> dict[str, TableLag]:
        """Topic name -> its table's lag, for the topics (rows of ``topics()``) whose
        mode is not ``disabled``."""
        modes = await self._cluster.table_modes([t["name"] for t in topics])
        ends = {t["name"]: t["ends"] for t in topics if t["name"] in modes}
        return {name: await self._lag(name, modes[name], ends[name]) for name in sorted(ends)}

    async def lag(self, topic: dict[str, Any]) -> TableLag | None:
        """The lag of one topic (as ``topic()`` returns it), None when it is no table."""
        mode = next((c["value"] for c in topic["configs"] if c["name"] == TABLE_MODE), None)
        if mode in (None, "disabled"):
            return None
        ends = {p["partition"]: p["end_offset"] for p in topic["partitions"]}
        return await self._lag(topic["name"], str(mode), ends)

    async def _lag(self, topic: str, mode: str, ends: dict[int, int]) -> TableLag:
        return await asyncio.to_thread(table_lag, self.location, topic, mode, ends)

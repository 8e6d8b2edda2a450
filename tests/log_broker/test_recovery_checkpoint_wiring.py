"""The running broker keeps the recovery checkpoint current (``_synced_checkpoint``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from headrace.log_broker import Broker
from headrace.log_broker.records import _batches as _records
from headrace.log_broker.storage._synced_checkpoint import INTERVAL_MS, read_positions


async def test_synced_positions_reach_the_checkpoint_within_its_interval(tmp_path: Path) -> None:
    records = [_records.Record(i, 1_000 + i, b"k", b"v" * 50) for i in range(5)]
    async with Broker(tmp_path / "data") as broker:
        topic = await asyncio.to_thread(broker.state.logs.create_topic, "t", 3)
        log = topic.partitions[1]
        log.append(bytearray(_records.encode_batch(records)), now_ms=0)
        await broker.state.syncer.sync(log)
        await asyncio.sleep(2 * INTERVAL_MS / 1000 + 0.5)
        positions = read_positions(tmp_path / "data")
        assert positions["t-1"].position == log.size_bytes > 0
        assert positions["t-1"].inode == log.synced_position.inode
        assert positions["t-0"].position == 0

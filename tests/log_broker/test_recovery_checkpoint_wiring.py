"""The running broker keeps the recovery checkpoint current (``_synced_checkpoint``)."""

from __future__ import annotations

import asyncio
import time
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
        # The checkpoint is written once an interval: the synced position is in it by the
        # second write, however the interval's timer fell against the sync.
        deadline = time.monotonic() + 2 * INTERVAL_MS / 1000 + 0.5
        while (positions := read_positions(tmp_path / "data")).get("t-1") is None or (
            positions["t-1"].position != log.size_bytes
        ):
            assert time.monotonic() < deadline, f"not in the checkpoint in time: {positions}"
            await asyncio.sleep(0.05)
        assert positions["t-1"].position == log.size_bytes > 0
        assert positions["t-1"].inode == log.synced_position.inode
        assert positions["t-0"].position == 0

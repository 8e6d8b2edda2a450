"""The broker's own topics, as a fresh broker creates them: counts and configs pinned."""

from __future__ import annotations

from pathlib import Path

from headrace.log_broker import Broker


async def test_a_fresh_broker_creates_its_internal_topics_compacted(tmp_path: Path) -> None:
    async with Broker(tmp_path / "data") as broker:
        topics = broker.state.logs.topics()
        shape = {
            name: (len(topics[name].partitions), topics[name].overrides)
            for name in ("__consumer_offsets", "__share_group_state", "__transaction_state")
        }
    assert shape == {
        "__consumer_offsets": (10, {"cleanup.policy": "compact", "segment.bytes": "104857600"}),
        "__share_group_state": (4, {"cleanup.policy": "compact", "segment.bytes": "16777216"}),
        "__transaction_state": (10, {"cleanup.policy": "compact"}),
    }

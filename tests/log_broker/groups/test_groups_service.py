"""The coordinator wired to real partition logs: records on disk, fsync before the
answer, state rebuilt on reopen, and the timer task on the event loop."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from headrace.log_broker._notify import AppendNotifier
from headrace.log_broker.groups import (
    OFFSETS_TOPIC,
    GroupConfig,
    GroupService,
    GroupState,
    JoinRequest,
    MemberIdRequiredError,
    NewOffset,
    OffsetKey,
    TopicPartition,
    decode_key,
    decode_offset_value,
    partition_for,
)
from headrace.log_broker.records import _batches as _records
from headrace.log_broker.storage import GroupSyncer, LogManager

CONFIG = GroupConfig(initial_rebalance_delay_ms=0, min_session_timeout_ms=100)
T0 = TopicPartition("orders", 0)


def _open(data: Path) -> tuple[LogManager, GroupSyncer, GroupService]:
    logs = LogManager.open(data)
    syncer = GroupSyncer()
    return logs, syncer, GroupService.open(logs, syncer, AppendNotifier(), CONFIG)


def _join(group: str, member_id: str, session_ms: int = 10_000) -> JoinRequest:
    return JoinRequest(
        group,
        member_id,
        None,
        "client",
        "",
        session_ms,
        session_ms,
        "consumer",
        (("range", b"meta"),),
    )


async def _member(service: GroupService, group: str, session_ms: int = 10_000) -> str:
    with pytest.raises(MemberIdRequiredError) as caught:
        await service.join(_join(group, "", session_ms))
    member_id = caught.value.member_id
    result = await service.join(_join(group, member_id, session_ms))
    await service.sync(group, result.generation, member_id, None, {member_id: b"assigned"})
    return member_id


async def test_offsets_topic_is_created_compacted(tmp_path: Path) -> None:
    logs, syncer, _service = _open(tmp_path)
    topic = logs.topics()[OFFSETS_TOPIC]
    assert len(topic.partitions) == CONFIG.offsets_topic_partitions
    assert topic.config.compact and topic.overrides["cleanup.policy"] == "compact"
    logs.close()
    syncer.close()


async def test_commit_is_fsynced_into_the_groups_partition(tmp_path: Path) -> None:
    logs, syncer, service = _open(tmp_path)
    service.start()
    await service.commit("g", -1, "", None, {T0: NewOffset(41, 3, "meta")})
    log = logs.get_log(OFFSETS_TOPIC, partition_for("g", CONFIG.offsets_topic_partitions))
    assert log is not None and log.log_end_offset == 1
    assert log.flushed_offset == 1  # answered only after the fsync
    data = log.read(0, 1 << 20)
    [header] = _records.parse_batches(data)
    [record] = _records.decode_records(data, header)
    assert record.key is not None and record.value is not None
    assert decode_key(record.key) == OffsetKey("g", "orders", 0)
    assert decode_offset_value(record.value).offset == 41
    assert syncer.fsyncs >= 1
    await service.stop()
    logs.close()
    syncer.close()


async def test_groups_and_offsets_survive_reopening(tmp_path: Path) -> None:
    logs, syncer, service = _open(tmp_path)
    service.start()
    member = await _member(service, "g")
    await service.commit("g", 1, member, None, {T0: NewOffset(7, -1, "")})
    for n in range(20):  # many commits, one value per key survives
        await service.commit("other", -1, "", None, {T0: NewOffset(n, -1, "")})
    await service.stop()
    logs.close()
    syncer.close()

    logs, syncer, service = _open(tmp_path)
    service.start()
    assert service.fetch("g", None)[T0].offset == 7
    assert service.fetch("other", [T0])[T0].offset == 19
    described = service.describe("g")
    assert described.state is GroupState.STABLE
    assert [(m.member_id, m.assignment) for m in described.members] == [(member, b"assigned")]
    service.heartbeat("g", 1, member, None)  # the member carries on without rejoining
    await service.stop()
    logs.close()
    syncer.close()


async def test_timer_task_expires_silent_members(tmp_path: Path) -> None:
    logs, syncer, service = _open(tmp_path)
    service.start()
    await _member(service, "g", session_ms=200)
    started = time.monotonic()
    while service.describe("g").state is not GroupState.EMPTY:
        assert time.monotonic() - started < 5, "the session never expired"
        await asyncio.sleep(0.02)
    assert 0.15 < time.monotonic() - started < 2
    await service.stop()
    logs.close()
    syncer.close()

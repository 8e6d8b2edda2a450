"""Committed offsets: durability before the answer, membership checks, retention,
deletion, and rebuilding everything from the records alone."""

from __future__ import annotations

import pytest
from group_harness import Harness

from headrace.log_broker.groups import (
    CoordinatorNotAvailableError,
    GroupCoordinator,
    GroupCoordinatorNotAvailableError,
    GroupIdNotFoundError,
    GroupState,
    IllegalGenerationError,
    NewOffset,
    NonEmptyGroupError,
    OffsetsReplay,
    RebalanceInProgressError,
    TopicPartition,
    UnknownMemberIdError,
)
from headrace.log_broker.records import _batches as _records

T0, T1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
DAY = 24 * 60 * 60 * 1000


def offsets(h: Harness, group: str = "g") -> dict[TopicPartition, int]:
    return {tp: v.offset for tp, v in h.coordinator.fetch(group, None).items()}


def test_commit_is_visible_only_once_durable() -> None:
    h = Harness(auto_flush=False)
    reply = h.commit("g", -1, "", {T0: NewOffset(5, 2, "m")})
    assert not reply.done and offsets(h) == {}
    [write] = h.hold()
    assert write.group_id == "g" and len(write.records) == 1
    h.flush()
    assert reply.result() is None
    value = h.coordinator.fetch("g", [T0, T1])
    assert list(value) == [T0]
    assert (value[T0].offset, value[T0].leader_epoch, value[T0].metadata) == (5, 2, "m")
    assert value[T0].commit_timestamp == h.clock.wall_ms()


def test_failed_write_reports_the_error_and_stores_nothing() -> None:
    h = Harness(auto_flush=False)
    reply = h.commit("g", -1, "", {T0: NewOffset(5, -1, "")})
    h.flush(error=GroupCoordinatorNotAvailableError("fsync failed"))
    with pytest.raises(CoordinatorNotAvailableError):
        reply.result()
    assert offsets(h) == {}


def test_members_commit_with_their_generation(h: Harness) -> None:
    generation, ids = h.form_group(2)
    assert h.commit("g", generation, ids[0], {T0: NewOffset(10, -1, "")}).result() is None
    with pytest.raises(IllegalGenerationError):
        h.commit("g", generation - 1, ids[0], {T0: NewOffset(1, -1, "")}).result()
    with pytest.raises(UnknownMemberIdError):
        h.commit("g", generation, "stranger", {T0: NewOffset(1, -1, "")}).result()
    with pytest.raises(UnknownMemberIdError):  # no standalone commits into a live group
        h.commit("g", -1, "", {T0: NewOffset(1, -1, "")}).result()
    h.new_member()  # rebalancing: commits of the old generation still count...
    assert h.commit("g", generation, ids[1], {T1: NewOffset(20, -1, "")}).result() is None
    assert offsets(h) == {T0: 10, T1: 20}
    with pytest.raises(IllegalGenerationError):
        h.commit("nobody", 3, "x", {T0: NewOffset(1, -1, "")}).result()


def test_commit_during_completing_rebalance_asks_to_rejoin(h: Harness) -> None:
    ids = [h.member_id() for _ in range(2)]
    for m in ids:
        h.join("g", m)
    with pytest.raises(RebalanceInProgressError):
        h.coordinator.commit("g", 1, ids[0], None, {T0: NewOffset(1, -1, "")}).result()


def test_later_commit_wins_even_when_writes_finish_in_order(h: Harness) -> None:
    for n in range(5):
        h.commit("g", -1, "", {T0: NewOffset(n, -1, "")})
    assert offsets(h) == {T0: 4}


def test_empty_group_offsets_expire_after_retention() -> None:
    h = Harness(offsets_retention_ms=DAY, offsets_retention_check_interval_ms=60_000)
    generation, ids = h.form_group(1)
    h.commit("g", generation, ids[0], {T0: NewOffset(7, -1, "")})
    h.advance(2 * DAY)  # a live group keeps its offsets however old
    h.heartbeat("g", generation, ids[0])
    assert offsets(h) == {T0: 7}
    h.coordinator.leave("g", [(ids[0], None)])
    assert h.coordinator.describe("g").state is GroupState.EMPTY
    h.advance(DAY - 60_000)
    assert offsets(h) == {T0: 7}
    h.advance(60_000)
    assert offsets(h) == {}
    h.advance(60_000)  # next pass: nothing left, the group itself goes
    assert h.coordinator.list_groups() == []
    tombstones = [key for key, value in h.records if value is None]
    assert len(tombstones) == 2  # the offset, then the group


def test_standalone_offsets_expire_one_by_one() -> None:
    h = Harness(offsets_retention_ms=DAY, offsets_retention_check_interval_ms=60_000)
    h.commit("g", -1, "", {T0: NewOffset(1, -1, "")})
    h.advance(DAY // 2)
    h.commit("g", -1, "", {T1: NewOffset(2, -1, "")})
    h.advance(DAY // 2)
    assert offsets(h) == {T1: 2}
    h.advance(DAY // 2)
    assert offsets(h) == {}


def test_delete_group_tombstones_everything(h: Harness) -> None:
    generation, ids = h.form_group(1)
    h.commit("g", generation, ids[0], {T0: NewOffset(1, -1, ""), T1: NewOffset(2, -1, "")})
    with pytest.raises(NonEmptyGroupError):
        h.delete("g").result()
    h.coordinator.leave("g", [(ids[0], None)])
    assert h.delete("g").result() is None
    assert h.coordinator.list_groups() == [] and offsets(h) == {}
    assert [value for _, value in h.records[-3:]] == [None, None, None]
    with pytest.raises(GroupIdNotFoundError):
        h.delete("g").result()


def test_group_being_deleted_refuses_joins_until_gone() -> None:
    h = Harness(auto_flush=False)
    h.commit("g", -1, "", {T0: NewOffset(1, -1, "")})
    h.flush()
    deleting = h.coordinator.delete("g")
    assert h.coordinator.describe("g").state is GroupState.DEAD
    with pytest.raises(CoordinatorNotAvailableError):
        h.join("g").result()
    h.flush()
    assert deleting.done
    with pytest.raises(Exception, match="rejoin as"):
        h.join("g").result()  # a fresh group: member id required


def _replay(h: Harness) -> OffsetsReplay:
    """Feed the records written so far through the start-up replay, as one batch."""
    replay = OffsetsReplay()
    records = [_records.Record(i, 0, k, v) for i, (k, v) in enumerate(h.records)]
    buf = _records.encode_batch(records)
    [header] = _records.parse_batches(buf)
    replay.apply(header, _records.decode_records(buf, header))
    return replay


def test_state_rebuilt_from_records_matches() -> None:
    h = Harness()
    generation, ids = h.form_group(2)
    h.commit("g", generation, ids[0], {T0: NewOffset(11, 4, "meta")})
    h.commit("solo", -1, "", {T1: NewOffset(3, -1, "")})
    replay = _replay(h)
    restored = GroupCoordinator(h.coordinator.config, h.clock)
    restored.restore(replay.groups, replay.offsets, replay.pending)
    assert restored.fetch("g", None) == h.coordinator.fetch("g", None)
    assert restored.fetch("solo", None) == h.coordinator.fetch("solo", None)
    before, after = h.coordinator.describe("g"), restored.describe("g")
    assert after.state is GroupState.STABLE and after.protocol == "range"
    assert [(m.member_id, m.assignment) for m in after.members] == [
        (m.member_id, m.assignment) for m in before.members
    ]
    # Members keep heartbeating across the restart without rejoining...
    h.clock.advance(5_000)
    restored.heartbeat("g", generation, ids[0])
    # ...and those that do not come back expire by their session timeout.
    h.clock.advance(5_000)
    restored.tick()
    assert restored.describe("g").state is GroupState.PREPARING_REBALANCE
    assert [m.member_id for m in restored.describe("g").members] == [ids[0]]


def test_replay_materializes_transactional_offsets_only_on_commit_markers() -> None:
    from headrace.log_broker.groups import (
        OffsetKey,
        OffsetValue,
        encode_offset_key,
        encode_offset_value,
    )

    def txn_batch(producer_id: int, offset: int, value: int) -> bytes:
        key = encode_offset_key(OffsetKey("g", "orders", 0))
        record = _records.Record(offset, 0, key, encode_offset_value(OffsetValue(value, -1, "", 0)))
        return _records.encode_batch(
            [record], producer_id=producer_id, producer_epoch=0, is_transactional=True
        )

    def marker(producer_id: int, offset: int, commit: bool) -> bytes:
        return _records.encode_control_batch(
            producer_id=producer_id,
            producer_epoch=0,
            commit=commit,
            coordinator_epoch=0,
            timestamp_ms=0,
            base_offset=offset,
        )

    log = (
        txn_batch(1, 0, 100)
        + txn_batch(2, 1, 200)
        + marker(2, 2, commit=False)
        + txn_batch(3, 3, 300)
    )
    replay = OffsetsReplay()
    for header in _records.parse_batches(log):
        replay.apply(header, _records.decode_records(log, header))
    assert replay.offsets == {}  # nothing committed yet; 2 aborted
    assert set(replay.pending) == {1, 3}
    tail = marker(1, 4, commit=True)
    [header] = _records.parse_batches(tail)
    replay.apply(header, _records.decode_records(tail, header))
    assert replay.offsets["g"][T0].offset == 100
    coordinator = GroupCoordinator(Harness().coordinator.config, Harness().clock)
    coordinator.restore(replay.groups, replay.offsets, replay.pending)
    coordinator.complete_transaction(3, commit=True)
    assert coordinator.fetch("g", [T0])[T0].offset == 300


def _offset_batch(offset: int, value: int, producer_id: int = -1) -> bytes:
    from headrace.log_broker.groups import (
        OffsetKey,
        OffsetValue,
        encode_offset_key,
        encode_offset_value,
    )

    key = encode_offset_key(OffsetKey("g", "orders", 0))
    record = _records.Record(offset, 0, key, encode_offset_value(OffsetValue(value, -1, "", 0)))
    if producer_id < 0:
        return _records.encode_batch([record], base_offset=offset)
    return _records.encode_batch(
        [record],
        producer_id=producer_id,
        producer_epoch=0,
        is_transactional=True,
        base_offset=offset,
    )


def _commit_marker(producer_id: int, offset: int) -> bytes:
    return _records.encode_control_batch(
        producer_id=producer_id,
        producer_epoch=0,
        commit=True,
        coordinator_epoch=0,
        timestamp_ms=0,
        base_offset=offset,
    )


def test_a_plain_commit_written_after_a_transactional_one_wins_on_replay() -> None:
    # txn stages 100, a plain commit writes 150, then the txn commits: 150 stays, as in
    # Kafka (and as a compacted log, which may keep only the later record, would say).
    log = _offset_batch(0, 100, producer_id=7) + _offset_batch(1, 150) + _commit_marker(7, 2)
    replay = OffsetsReplay()
    for header in _records.parse_batches(log):
        replay.apply(header, _records.decode_records(log, header))
    assert replay.offsets["g"][T0].offset == 150
    # The other order: plain 150 first, then the transaction's 100 committed: 100 is newer.
    log = _offset_batch(0, 150) + _offset_batch(1, 100, producer_id=7) + _commit_marker(7, 2)
    replay = OffsetsReplay()
    for header in _records.parse_batches(log):
        replay.apply(header, _records.decode_records(log, header))
    assert replay.offsets["g"][T0].offset == 100


def test_an_open_transaction_overtaken_by_a_plain_commit_is_not_handed_over() -> None:
    log = _offset_batch(0, 100, producer_id=7) + _offset_batch(1, 150)
    replay = OffsetsReplay()
    for header in _records.parse_batches(log):
        replay.apply(header, _records.decode_records(log, header))
    assert replay.still_pending() == {}
    coordinator = GroupCoordinator(Harness().coordinator.config, Harness().clock)
    coordinator.restore(replay.groups, replay.offsets, replay.still_pending())
    coordinator.complete_transaction(7, commit=True)
    assert coordinator.fetch("g", [T0])[T0].offset == 150


def test_live_commit_after_a_staged_transaction_wins_at_its_marker() -> None:
    from headrace.log_broker.groups import OffsetValue
    from headrace.log_broker.groups._offsets import GroupOffsets

    offsets = GroupOffsets()
    offsets.stage(7, {T0: OffsetValue(100, -1, "", 0)})
    offsets.put({T0: OffsetValue(150, -1, "", 0)})
    offsets.complete_transaction(7, commit=True)
    assert offsets.get(T0) == OffsetValue(150, -1, "", 0)
    offsets.stage(8, {T0: OffsetValue(200, -1, "", 0)})
    offsets.complete_transaction(8, commit=True)
    assert offsets.get(T0) == OffsetValue(200, -1, "", 0)


def test_unreadable_records_are_skipped_not_fatal() -> None:
    replay = OffsetsReplay()
    records = [_records.Record(0, 0, b"\x00\x01garbage", b"x"), _records.Record(1, 0, None, b"")]
    buf = _records.encode_batch(records)
    [header] = _records.parse_batches(buf)
    replay.apply(header, _records.decode_records(buf, header))
    assert replay.unreadable == 2 and replay.offsets == {}

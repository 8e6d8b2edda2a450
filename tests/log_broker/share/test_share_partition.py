"""The share-partition state machine: acquisition, locks, acknowledgements, limits."""

from __future__ import annotations

import pytest

from headrace.log_broker.share._config import PartitionRules
from headrace.log_broker.share._errors import InvalidRecordStateError
from headrace.log_broker.share._partition import (
    AckType,
    Acquired,
    RecordState,
    SharePartition,
)

RULES = PartitionRules(lock_duration_ms=1000, delivery_count_limit=3, max_in_flight_records=10)


def batches(*spans: tuple[int, int]) -> list[tuple[int, int]]:
    return list(spans)


def test_members_acquire_disjoint_records_and_accept_moves_the_start() -> None:
    p = SharePartition(0, RULES)
    assert p.acquire("a", 0, 2, batches((0, 1), (2, 3))) == [Acquired(0, 1, 1)]
    assert p.acquire("b", 0, 5, batches((2, 3))) == [Acquired(2, 3, 1)]
    p.acknowledge("b", 2, 3, (AckType.ACCEPT,), 0)
    assert p.start_offset == 0  # 0..1 still held by a
    p.acknowledge("a", 0, 1, (AckType.ACCEPT,), 0)
    assert (p.start_offset, p.end_offset, p.in_flight) == (4, 4, 0)


def test_lock_expiry_redelivers_with_delivery_count_kept() -> None:
    p = SharePartition(0, RULES)
    p.acquire("a", 0, 10, batches((0, 4)))
    assert p.acquire("b", 999, 10) == []  # still locked
    assert p.acquire("b", 1000, 10) == [Acquired(0, 4, 2)]
    with pytest.raises(InvalidRecordStateError):
        p.acknowledge("a", 0, 0, (AckType.ACCEPT,), 1000)  # a's lock is gone


def test_release_redelivers_and_the_delivery_limit_archives() -> None:
    p = SharePartition(0, RULES)
    for delivery in (1, 2, 3):
        assert p.acquire("a", 0, 10, batches((0, 0))) == [Acquired(0, 0, delivery)]
        p.acknowledge("a", 0, 0, (AckType.RELEASE,), 0)
    assert p.state_of(0) is None  # archived and passed: the start moved on
    assert p.start_offset == 1
    assert p.acquire("a", 0, 10) == []


def test_expiry_at_the_limit_archives() -> None:
    p = SharePartition(0, RULES)
    for now in (0, 1000, 2000):
        assert p.acquire("a", now, 10, batches((0, 0)))
    assert p.acquire("b", 3000, 10) == []
    assert p.start_offset == 1


def test_reject_archives_one_record_and_others_stay() -> None:
    p = SharePartition(0, RULES)
    p.acquire("a", 0, 10, batches((0, 2)))
    p.acknowledge("a", 0, 2, (AckType.ACCEPT, AckType.REJECT, AckType.RELEASE), 0)
    assert p.state_of(2) is RecordState.AVAILABLE
    assert p.start_offset == 2
    assert p.acquire("b", 0, 10) == [Acquired(2, 2, 2)]


def test_renew_extends_the_lock() -> None:
    p = SharePartition(0, RULES)
    p.acquire("a", 0, 10, batches((0, 0)))
    p.acknowledge("a", 0, 0, (AckType.RENEW,), 900)
    assert p.acquire("b", 1500, 10) == []
    p.acknowledge("a", 0, 0, (AckType.ACCEPT,), 1500)
    assert p.start_offset == 1


def test_acknowledging_records_of_another_member_changes_nothing() -> None:
    p = SharePartition(0, RULES)
    p.acquire("a", 0, 1, batches((0, 0)))
    p.acquire("b", 0, 1, batches((1, 1)))
    with pytest.raises(InvalidRecordStateError):
        p.acknowledge("a", 0, 1, (AckType.ACCEPT,), 0)
    assert p.state_of(0) is RecordState.ACQUIRED
    with pytest.raises(InvalidRecordStateError):
        p.acknowledge("a", 5, 6, (AckType.ACCEPT,), 0)  # never delivered
    with pytest.raises(InvalidRecordStateError):
        p.acknowledge("a", 0, 0, (9,), 0)  # no such type


def test_in_flight_records_are_bounded_but_one_big_batch_still_moves() -> None:
    p = SharePartition(0, RULES)
    assert p.acquire("a", 0, 100, batches((0, 5), (6, 11))) == [Acquired(0, 5, 1)]
    assert p.room() == 4
    assert p.acquire("b", 0, 100, batches((6, 11))) == []
    p.acknowledge("a", 0, 5, (AckType.ACCEPT,), 0)
    assert p.acquire("b", 0, 100, batches((6, 30))) == [Acquired(6, 30, 1)]


def test_member_release_returns_its_records() -> None:
    p = SharePartition(0, RULES)
    p.acquire("a", 0, 10, batches((0, 1)))
    assert p.release_member("a")
    assert p.acquire("b", 0, 10) == [Acquired(0, 1, 2)]


def test_log_start_moving_forgets_records_below_it() -> None:
    p = SharePartition(0, RULES)
    p.acquire("a", 0, 10, batches((0, 3)))
    assert p.follow_log_start(2)
    assert (p.start_offset, p.in_flight) == (2, 2)


def test_snapshot_restores_final_states_and_makes_locks_available() -> None:
    p = SharePartition(0, RULES)
    p.acquire("a", 0, 10, batches((0, 5)))
    p.acknowledge("a", 1, 2, (AckType.ACCEPT,), 0)
    p.acknowledge("a", 3, 3, (AckType.RELEASE,), 0)
    p.acknowledge("a", 4, 4, (AckType.REJECT,), 0)
    restored = SharePartition.restore(p.snapshot(), RULES)
    assert (restored.start_offset, restored.end_offset) == (0, 6)
    assert restored.acquire("b", 0, 10) == [Acquired(0, 0, 2), Acquired(3, 3, 2), Acquired(5, 5, 2)]
    assert restored.state_of(1) is RecordState.ACKNOWLEDGED
    assert restored.state_of(4) is RecordState.ARCHIVED


def test_batches_not_to_deliver_are_archived_without_delivery() -> None:
    p = SharePartition(0, RULES)
    spans = [(0, 1, False), (2, 2, True), (3, 3, False)]
    assert p.acquire("a", 0, 10, spans) == [Acquired(2, 2, 1)]
    assert (p.start_offset, p.end_offset) == (2, 4)
    p.acknowledge("a", 2, 2, (AckType.ACCEPT,), 0)
    assert (p.start_offset, p.in_flight) == (4, 0)

"""Producer state of one partition: dedupe window, sequences, epochs, open transactions."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from headrace.transactions import (
    AppendPlan,
    CompletedTxn,
    CorruptSnapshotError,
    Duplicate,
    InvalidProducerEpochError,
    InvalidTxnStateError,
    OutOfOrderSequenceError,
    ProducerStates,
    TxnCoordinatorFencedError,
    decode_snapshot,
    encode_snapshot,
)
from headrace.transactions._producer_state import last_sequence


@dataclass(frozen=True)
class Batch:
    producer_id: int
    producer_epoch: int
    base_sequence: int
    last_offset_delta: int = 0
    max_timestamp: int = 1000
    is_transactional: bool = False


class Log:
    """A fake partition: appends payloads after validating them against the state."""

    def __init__(self, states: ProducerStates | None = None) -> None:
        self.states = states or ProducerStates()
        self.batches: list[tuple[int, Batch]] = []
        self.end = 0

    def produce(self, *batches: Batch) -> int | Duplicate:
        verdict = self.states.validate(batches)
        if isinstance(verdict, Duplicate):
            return verdict
        first = self.end
        for batch in batches:
            self.batches.append((self.end, batch))
            self.end += batch.last_offset_delta + 1
        if isinstance(verdict, AppendPlan):
            self.states.commit(verdict, first)
        return first

    def marker(
        self, pid: int, epoch: int, *, commit: bool, coordinator_epoch: int = 0
    ) -> CompletedTxn:
        self.states.check_marker(pid, epoch, coordinator_epoch)
        offset = self.end
        self.end += 1
        return self.states.complete(
            pid, epoch, coordinator_epoch, commit=commit, offset=offset, timestamp=2000
        )


def test_a_retried_batch_is_answered_with_its_original_offsets_and_not_appended() -> None:
    log = Log()
    assert log.produce(Batch(7, 0, 0, last_offset_delta=2)) == 0
    assert log.produce(Batch(7, 0, 3, last_offset_delta=1)) == 3
    again = log.produce(Batch(7, 0, 0, last_offset_delta=2))
    assert again == Duplicate(base_offset=0, last_offset=2, timestamp=1000)
    assert log.produce(Batch(7, 0, 3, last_offset_delta=1)) == Duplicate(3, 4, 1000)
    assert log.end == 5


def test_only_the_last_five_batches_are_remembered() -> None:
    log = Log()
    for seq in range(6):
        log.produce(Batch(1, 0, seq))
    assert isinstance(log.produce(Batch(1, 0, 1)), Duplicate)
    # Batch 0 fell out of the window: it is neither a duplicate nor in sequence.
    with pytest.raises(OutOfOrderSequenceError):
        log.produce(Batch(1, 0, 0))


def test_a_gap_in_sequences_is_out_of_order() -> None:
    log = Log()
    log.produce(Batch(1, 0, 0, last_offset_delta=4))
    with pytest.raises(OutOfOrderSequenceError) as caught:
        log.produce(Batch(1, 0, 6))
    assert caught.value.error_code == 45
    assert log.end == 5


def test_a_stale_epoch_is_refused_and_a_new_epoch_restarts_at_zero() -> None:
    log = Log()
    log.produce(Batch(1, 3, 0))
    with pytest.raises(InvalidProducerEpochError) as caught:
        log.produce(Batch(1, 2, 1))
    assert caught.value.error_code == 47
    with pytest.raises(OutOfOrderSequenceError):
        log.produce(Batch(1, 4, 5))
    assert log.produce(Batch(1, 4, 0)) == 1
    # The old epoch's window is gone: its retry is now fenced, not a duplicate.
    with pytest.raises(InvalidProducerEpochError):
        log.produce(Batch(1, 3, 0))


def test_an_unknown_producer_may_start_at_any_sequence() -> None:
    # Its earlier batches may have been removed by retention before a restart.
    log = Log()
    assert log.produce(Batch(9, 0, 42)) == 0
    assert log.produce(Batch(9, 0, 43)) == 1


def test_sequences_wrap_around_at_int32_max() -> None:
    assert last_sequence(2**31 - 2, 3) == 1
    log = Log()
    log.produce(Batch(1, 0, 2**31 - 2, last_offset_delta=1))
    assert log.produce(Batch(1, 0, 0)) == 2


def test_batches_of_one_payload_are_checked_in_order() -> None:
    log = Log()
    assert log.produce(Batch(1, 0, 0), Batch(1, 0, 1, last_offset_delta=1), Batch(-1, -1, -1)) == 0
    assert log.produce(Batch(1, 0, 3)) == 4
    log2 = Log()
    with pytest.raises(OutOfOrderSequenceError):
        log2.produce(Batch(1, 0, 0), Batch(1, 0, 2))
    assert log2.states.entry(1) is None  # nothing of the refused payload was recorded


def test_plain_batches_need_no_tracking() -> None:
    states = ProducerStates()
    assert states.validate([Batch(-1, -1, -1)]) is None
    assert states.entries() == []


def test_a_transaction_holds_back_the_last_stable_offset_until_its_marker() -> None:
    log = Log()
    log.produce(Batch(-1, -1, -1, last_offset_delta=1))
    assert log.states.last_stable_offset(log.end) == 2
    log.produce(Batch(5, 0, 0, is_transactional=True))
    log.produce(Batch(6, 0, 0, is_transactional=True))
    log.produce(Batch(5, 0, 1, is_transactional=True))
    assert log.states.ongoing() == {5: 2, 6: 3}
    assert log.states.last_stable_offset(log.end) == 2
    assert log.marker(5, 0, commit=True) == CompletedTxn(5, 2, 5, aborted=False)
    assert log.states.last_stable_offset(log.end) == 3
    assert log.marker(6, 0, commit=False) == CompletedTxn(6, 3, 6, aborted=True)
    assert log.states.last_stable_offset(log.end) == log.end == 7


def test_a_plain_batch_inside_an_open_transaction_is_refused() -> None:
    log = Log()
    log.produce(Batch(5, 0, 0, is_transactional=True))
    with pytest.raises(InvalidTxnStateError) as caught:
        log.produce(Batch(5, 0, 1))
    assert caught.value.error_code == 48


def test_a_marker_with_a_newer_epoch_fences_the_producer() -> None:
    log = Log()
    log.produce(Batch(5, 0, 0, is_transactional=True))
    log.marker(5, 1, commit=False)  # the coordinator aborted a timed-out transaction
    with pytest.raises(InvalidProducerEpochError):
        log.produce(Batch(5, 0, 1, is_transactional=True))
    with pytest.raises(InvalidProducerEpochError):
        log.marker(5, 0, commit=True)
    assert log.produce(Batch(5, 1, 0, is_transactional=True)) == 2


def test_a_marker_from_an_older_coordinator_is_refused() -> None:
    log = Log()
    log.marker(5, 0, commit=True, coordinator_epoch=3)
    with pytest.raises(TxnCoordinatorFencedError):
        log.marker(5, 0, commit=True, coordinator_epoch=2)


def test_offset_commits_without_sequences_skip_the_sequence_check() -> None:
    log = Log()
    log.produce(Batch(5, 0, -1, is_transactional=True))
    log.produce(Batch(5, 0, -1, is_transactional=True))
    assert log.states.ongoing() == {5: 0}


def test_expired_and_deleted_producers_are_forgotten_but_open_transactions_stay() -> None:
    log = Log()
    log.produce(Batch(1, 0, 0, max_timestamp=100))
    log.produce(Batch(2, 0, 0, max_timestamp=100, is_transactional=True))
    log.produce(Batch(3, 0, 0, max_timestamp=5000))
    assert log.states.remove_expired(now_ms=2000, expiration_ms=1000) == [1]
    log.states.truncate_head(3)
    assert sorted(e.producer_id for e in log.states.entries()) == [2]


# ---------------------------------------------------------------- snapshots and rebuilding


def _rebuild(log: Log, snapshot: bytes) -> ProducerStates:
    """Restore a snapshot, then replay the log's batches from the snapshot's offset."""
    offset, states = decode_snapshot(snapshot)
    for base, batch in log.batches:
        if base >= offset:
            states.replay(batch, base)
    return states


def test_dedupe_holds_across_a_restart_from_snapshot_plus_log() -> None:
    log = Log()
    log.produce(Batch(1, 0, 0, last_offset_delta=1))
    log.produce(Batch(2, 0, 0, is_transactional=True))
    snapshot = encode_snapshot(log.end, log.states)
    log.produce(Batch(1, 0, 2))
    log.produce(Batch(1, 0, 3))
    restarted = Log(_rebuild(log, snapshot))
    restarted.batches, restarted.end = log.batches, log.end
    assert restarted.produce(Batch(1, 0, 0, last_offset_delta=1)) == Duplicate(0, 1, 1000)
    assert restarted.produce(Batch(1, 0, 3)) == Duplicate(4, 4, 1000)
    assert restarted.produce(Batch(1, 0, 4)) == 5
    assert restarted.states.ongoing() == {2: 2}


def test_a_snapshot_reads_back_exactly() -> None:
    log = Log()
    for seq in range(7):
        log.produce(Batch(seq % 3, 1, seq // 3, is_transactional=seq % 3 == 2))
    log.marker(0, 1, commit=True, coordinator_epoch=4)
    offset, states = decode_snapshot(encode_snapshot(log.end, log.states))
    assert offset == log.end
    assert states.entries() == log.states.entries()
    assert states.ongoing() == log.states.ongoing()


@pytest.mark.parametrize("damage", ["magic", "crc", "short", "extra"])
def test_a_damaged_snapshot_is_refused(damage: str) -> None:
    log = Log()
    log.produce(Batch(1, 0, 0))
    data = bytearray(encode_snapshot(1, log.states))
    if damage == "magic":
        data[0:4] = b"XXXX"
    elif damage == "crc":
        data[-1] ^= 0xFF
    elif damage == "short":
        data = data[:-3]
    else:
        data += b"\x00"
    with pytest.raises(CorruptSnapshotError):
        decode_snapshot(bytes(data))


_batch = st.builds(
    Batch,
    producer_id=st.integers(0, 2),
    producer_epoch=st.integers(0, 1),
    base_sequence=st.integers(0, 6),
    last_offset_delta=st.integers(0, 2),
    is_transactional=st.booleans(),
)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.one_of(_batch, st.tuples(st.integers(0, 2), st.booleans())), max_size=30),
    st.integers(0, 30),
)
def test_rebuilding_from_any_snapshot_point_gives_the_same_state(
    ops: list[Batch | tuple[int, bool]], cut: int
) -> None:
    log = Log()
    snapshot = encode_snapshot(0, ProducerStates())
    markers: dict[int, tuple[int, int, bool]] = {}
    for i, op in enumerate(ops):
        if i == cut:
            snapshot = encode_snapshot(log.end, log.states)
        try:
            if isinstance(op, Batch):
                log.produce(op)
            else:
                pid, commit = op
                entry = log.states.entry(pid)
                epoch = entry.epoch if entry is not None and entry.epoch >= 0 else 0
                markers[log.end] = (pid, epoch, commit)
                log.marker(pid, epoch, commit=commit)
        except (OutOfOrderSequenceError, InvalidProducerEpochError, InvalidTxnStateError):
            pass
    offset, rebuilt = decode_snapshot(snapshot)
    data = {base: batch for base, batch in log.batches}
    for position in range(offset, log.end):
        if position in data:
            rebuilt.replay(data[position], position)
        elif position in markers:
            pid, epoch, commit = markers[position]
            rebuilt.complete(pid, epoch, 0, commit=commit, offset=position, timestamp=2000)
    assert rebuilt.ongoing() == log.states.ongoing()
    assert {e.producer_id: (e.epoch, e.batches) for e in rebuilt.entries()} == {
        e.producer_id: (e.epoch, e.batches) for e in log.states.entries()
    }

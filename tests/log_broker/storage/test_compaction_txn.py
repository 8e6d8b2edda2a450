"""Compaction of transactional data: committed records compact like any others, aborted
ones go, undecided ones stay whole, nothing past the last stable offset is touched,
markers outlive their data, and producer state survives."""

from __future__ import annotations

from pathlib import Path

import pytest
from compaction_helpers import compacted_log
from compaction_txn_helpers import (
    Writer,
    batches,
    committed_view,
    latest,
    read_committed,
    read_uncommitted,
)

from headrace.log_broker._txn_partitions import load
from headrace.log_broker.records import _batches as _records
from headrace.log_broker.storage import LogManager, PartitionLog
from headrace.log_broker.storage._cleaner import Cleaner
from headrace.log_broker.storage._cleaner_checkpoint import CLEANER_CHECKPOINT_FILE, read_checkpoint
from headrace.log_broker.storage._retain import delete_horizon
from headrace.transactions import Duplicate, OutOfOrderSequenceError

DAY = 86_400_000


def _clean(log: PartitionLog, now_ms: int = 10_000, up_to: int | None = None) -> int:
    return len(Cleaner().run([log], now_ms, None if up_to is None else (lambda _: up_to)))


def _headers(log: PartitionLog) -> list[_records.BatchHeader]:
    return [header for _, header in batches(log)]


def _bytes_from(log: PartitionLog, offset: int) -> bytes:
    out = b""
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        out += data
        offset = _records.parse_batches(bytearray(data))[-1].last_offset + 1
    return out


def test_committed_records_compact_like_plain_ones_and_aborted_ones_go(tmp_path: Path) -> None:
    log = compacted_log(tmp_path)
    w = Writer(log)
    w.txn(1, [(b"a", b"1"), (b"b", b"1")])  # 0-1, committed
    w.txn(2, [(b"a", b"X"), (b"c", b"X")])  # 2-3, aborted
    w.marker(1, commit=True)  # 4
    w.marker(2, commit=False)  # 5
    w.plain([(b"a", b"2")])  # 6
    w.txn(1, [(b"d", b"1"), (b"b", b"2")], _records.Compression.ZSTD)  # 7-8, committed
    w.marker(1, commit=True)  # 9
    log.roll(0)
    seen_before, _, _ = committed_view(log)

    assert _clean(log) == 1

    assert read_uncommitted(log) == [(6, b"a", b"2"), (7, b"d", b"1"), (8, b"b", b"2")]
    headers = {h.base_offset: h for h in _headers(log)}
    # Producer 1's first batch lost both records to later ones and is not its last
    # batch: it goes; producer 2's aborted batch loses its records but stays, empty,
    # as that producer's last data batch (its sequence). Both markers stay this pass
    # (each transaction still had a batch when the pass read the log).
    assert sorted(headers) == [2, 4, 5, 6, 7, 9]
    assert headers[2].records_count == 0 and headers[2].base_sequence == 0
    rebuilt = headers[7]
    assert (
        rebuilt.is_transactional,
        rebuilt.producer_id,
        rebuilt.producer_epoch,
        rebuilt.base_sequence,
        rebuilt.compression,
    ) == (True, 1, 0, 2, _records.Compression.ZSTD)
    assert headers[4].is_control and headers[5].is_control and headers[9].is_control
    seen_after, _, stable = committed_view(log)
    assert stable == log.log_end_offset
    assert latest(seen_after) == latest(seen_before) == {b"a": b"2", b"b": b"2", b"d": b"1"}
    log.close()


def test_an_open_transaction_is_left_whole_and_nothing_past_it_is_compacted(
    tmp_path: Path,
) -> None:
    log = compacted_log(tmp_path)
    w = Writer(log)
    w.plain([(b"a", b"1"), (b"b", b"1")])  # 0-1
    w.plain([(b"a", b"2")])  # 2
    opened = w.txn(5, [(b"a", b"open"), (b"b", b"open")])  # 3-4, no marker yet
    w.plain([(b"a", b"3"), (b"b", b"3")])  # 5-6
    w.plain([(b"a", b"4")])  # 7
    log.roll(0)
    tail = _bytes_from(log, opened)

    assert _clean(log) == 1

    # Below the open transaction: compacted against keys below it only.
    assert [r[0] for r in read_uncommitted(log)] == [1, 2, 3, 4, 5, 6, 7]
    assert _bytes_from(log, opened) == tail  # the transaction and all after it: untouched
    checkpoint = read_checkpoint(log.directory / CLEANER_CHECKPOINT_FILE)
    assert checkpoint.first_dirty_offset == opened
    assert _clean(log) == 0  # nothing more may be done until the log changes

    w.marker(5, commit=True)  # 8
    log.roll(0)
    assert _clean(log) == 1
    # The committed records lost to later plain ones; their batch stays, empty, as the
    # producer's last data batch, and so the marker stays with it.
    assert read_uncommitted(log) == [(6, b"b", b"3"), (7, b"a", b"4")]
    assert [h.base_offset for h in _headers(log)] == [3, 5, 7, 8]
    log.close()


def test_the_callers_last_stable_offset_bounds_the_pass(tmp_path: Path) -> None:
    manager = LogManager.open(tmp_path)
    manager.create_topic("c", 1, {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01"})
    log = manager.get_log("c", 0)
    assert log is not None
    w = Writer(log)
    for i in range(6):
        w.plain([(b"a", f"{i}".encode()), (b"b", f"{i}".encode())])  # 2i, 2i+1
    log.roll(0)
    stable = 6  # as if a transaction of another partition's view began there
    tail = _bytes_from(log, stable)
    asked: list[PartitionLog] = []

    def up_to(each: PartitionLog) -> int:
        asked.append(each)
        return stable

    assert manager.run_compaction(10_000, up_to) == 1
    assert asked == [log]
    assert [r[0] for r in read_uncommitted(log)] == [4, 5, 6, 7, 8, 9, 10, 11]
    assert _bytes_from(log, stable) == tail
    assert manager.run_compaction(10_000, up_to) == 0  # nothing dirty below the bound
    assert manager.run_compaction(10_000) == 1  # the bound moved to the log end
    assert [r[0] for r in read_uncommitted(log)] == [10, 11]
    manager.close()


def test_a_commit_marker_outlives_its_data_then_its_delete_horizon(tmp_path: Path) -> None:
    log = compacted_log(tmp_path, delete_retention_ms=DAY)
    w = Writer(log)
    w.txn(1, [(b"a", b"1")])  # 0
    first_marker = w.marker(1, commit=True)  # 1
    w.plain([(b"a", b"2")])  # 2
    w.txn(1, [(b"b", b"1")])  # 3
    last_marker = w.marker(1, commit=True)  # 4: producer 1's last batch
    log.roll(0)

    def pass_at(now_ms: int) -> dict[int, _records.BatchHeader]:
        w.plain([(b"filler", b"x")])  # something dirty to clean
        log.roll(0)
        assert _clean(log, now_ms) == 1
        return {h.base_offset: h for h in _headers(log)}

    original = _bytes_from(log, first_marker)[: _headers(log)[1].size]
    t0 = 5_000_000
    found = pass_at(t0)  # the data goes; the marker was seen with it, so it stays
    assert 0 not in found and first_marker in found
    assert _bytes_from(log, first_marker)[: len(original)] == original
    found = pass_at(t0 + 10)  # no data left: the marker gets its delete horizon
    assert delete_horizon(found[first_marker]) == t0 + 10 + DAY
    assert (
        found[first_marker].max_timestamp
        == _records.parse_batches(bytearray(original))[0].max_timestamp
    )
    found = pass_at(t0 + 10 + DAY - 1)
    assert first_marker in found
    found = pass_at(t0 + 10 + DAY)
    assert first_marker not in found
    assert last_marker in found and delete_horizon(found[last_marker]) is None
    assert latest(committed_view(log)[0]) == {b"a": b"2", b"b": b"1", b"filler": b"x"}
    log.close()


def test_without_an_aborted_index_abort_markers_stay_and_so_do_each_producers_last_batches(
    tmp_path: Path,
) -> None:
    log = compacted_log(tmp_path, delete_retention_ms=0)
    w = Writer(log)
    w.txn(1, [(b"a", b"aborted")])  # 0
    abort = w.marker(1, commit=False)  # 1
    w.txn(1, [(b"b", b"1")])  # 2
    w.marker(1, commit=True)  # 3
    last_data = w.txn(2, [(b"c", b"1")])  # 4: producer 2's last data batch
    only = w.marker(2, commit=True)  # 5: producer 2's last batch
    w.plain([(b"b", b"2"), (b"c", b"2")])  # 6-7
    w.txn(1, [(b"d", b"1")])  # 8
    w.marker(1, commit=True)  # 9: producer 1's last batch
    log.roll(0)
    for now_ms in range(10_000, 10_005):
        w.plain([(b"filler", b"x")])
        log.roll(0)
        _clean(log, now_ms)
    offsets = [h.base_offset for h in _headers(log)]
    # Producer 1's commit marker lost its data, then its horizon (0 ms) passed; the
    # abort marker stays for the aborted-transaction index no pass could release it
    # from; producer 2's data batch (now empty) and marker are its last ones.
    assert offsets[:6] == [abort, last_data, only, 6, 8, 9]
    assert _headers(log)[1].records_count == 0
    assert read_uncommitted(log)[:3] == [(6, b"b", b"2"), (7, b"c", b"2"), (8, b"d", b"1")]
    log.close()


def _retry(
    producer_id: int, sequence: int, count: int, transactional: bool = False
) -> list[_records.BatchHeader]:
    batch = _records.encode_batch(
        [_records.Record(i, 1_000, b"k", b"v") for i in range(count)],
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=sequence,
        is_transactional=transactional,
    )
    return _records.parse_batches(bytearray(batch))


def test_producer_state_rebuilt_from_a_compacted_log_still_dedupes(tmp_path: Path) -> None:
    log = compacted_log(tmp_path, delete_retention_ms=0)
    w = Writer(log)
    for i in range(8):  # an idempotent producer, two records a batch, keys reused
        w.idempotent(3, [(b"a", f"{i}".encode()), (b"b", f"{i}".encode())])
    last_idempotent = log.log_end_offset - 2
    for i in range(4):  # a transactional one, each transaction committed
        w.txn(4, [(b"t", f"{i}".encode())])
        w.marker(4, commit=True)
    w.plain([(b"a", b"plain"), (b"b", b"plain"), (b"t", b"plain")])
    log.roll(0)
    for now_ms in (10_000, 10_001, 10_002):  # data, then markers' horizons, then markers
        w.plain([(b"filler", b"x")])
        log.roll(0)
        _clean(log, now_ms)
    producer_batches = [h for h in _headers(log) if h.producer_id >= 0]
    assert [(h.producer_id, h.records_count, h.is_control) for h in producer_batches] == [
        (3, 0, False),
        (4, 0, False),
        (4, 1, True),
    ]  # each producer's last (data) batch only
    log.close()

    reopened = compacted_log(tmp_path, delete_retention_ms=0)  # a restart, no snapshot
    state = load(reopened)
    assert state.producers.ongoing() == {}
    assert state.last_stable_offset() == reopened.log_end_offset
    entry = state.producers.entry(3)
    assert entry is not None and (entry.epoch, entry.last_seq) == (0, 15)
    # The retry of the last batch is answered with where it was written, not appended.
    assert state.producers.validate(_retry(3, 14, 2)) == Duplicate(
        last_idempotent, last_idempotent + 1, 1_001
    )
    assert state.producers.validate(_retry(3, 16, 1)) is not None  # the next one goes on
    with pytest.raises(OutOfOrderSequenceError):
        state.producers.validate(_retry(3, 18, 1))  # a gap is refused
    # Producer 4's last batch is a commit marker: no transaction looks open; its last
    # data batch, emptied, still holds its sequence, so its next transaction is
    # accepted where the sequence goes on and nowhere else.
    assert state.producers.validate(_retry(4, 4, 1, transactional=True)) is not None
    with pytest.raises(OutOfOrderSequenceError):
        state.producers.validate(_retry(4, 5, 1, transactional=True))
    reopened.close()


def test_read_committed_after_compaction_sees_exactly_the_latest_committed_values(
    tmp_path: Path,
) -> None:
    log = compacted_log(tmp_path)
    w = Writer(log)
    live = load(log)  # the broker's state, kept up to date as it appends
    expected: dict[bytes | None, bytes | None] = {}
    for i in range(30):
        pid = 10 + i % 3
        pairs = [(f"k{(i * 7 + j) % 11}".encode(), f"{pid}/{i}/{j}".encode()) for j in range(3)]
        start = w.txn(pid, pairs)
        live.producers.replay(_retry(pid, 0, 3, transactional=True)[0], start)
        commit = i % 4 != 1
        offset = w.marker(pid, commit=commit)
        live.record_completion(
            live.producers.complete(pid, 0, 0, commit=commit, offset=offset, timestamp=0)
        )
        if commit:
            expected.update(pairs)
        if i % 5 == 4:
            w.plain([(b"k0", f"plain {i}".encode())])
            expected[b"k0"] = f"plain {i}".encode()
            log.roll(0)
    log.roll(0)
    aborted = live.aborted.entries()
    assert len(aborted) == 8
    assert latest(read_committed(log, aborted, log.log_end_offset)) == expected
    before = read_uncommitted(log)

    assert _clean(log) == 1

    after = read_uncommitted(log)
    assert len(after) == 11 < len(before)
    # With the index the broker holds (built before the pass) and with one rebuilt from
    # the compacted log (after a restart): exactly the latest committed value per key.
    seen = read_committed(log, aborted, log.log_end_offset)
    assert latest(seen) == expected and len(seen) == len(expected)
    rebuilt, _, stable = committed_view(log)
    assert rebuilt == seen and stable == log.log_end_offset
    log.close()


def test_a_log_stalled_by_an_open_transaction_is_not_read_again_until_it_changes(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import headrace.log_broker.storage._cleaner as cleaner_module

    log = compacted_log(tmp_path)
    w = Writer(log)
    w.txn(1, [(b"a", b"1")])
    w.plain([(b"a", b"2")])
    log.roll(0)
    scans = 0
    original = cleaner_module._scan

    def counting(*args: object) -> object:
        nonlocal scans
        scans += 1
        return original(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(cleaner_module, "_scan", counting)
    cleaner = Cleaner()
    assert cleaner.run([log], 10_000) == [] and scans == 1
    assert cleaner.run([log], 20_000) == [] and scans == 1
    w.marker(1, commit=True)
    log.roll(0)
    assert len(cleaner.run([log], 30_000)) == 1 and scans == 2
    assert read_uncommitted(log) == [(1, b"a", b"2")]
    log.close()


def test_batches_past_an_open_transaction_in_a_rewritten_segment_are_copied_as_they_are(
    tmp_path: Path,
) -> None:
    log = compacted_log(tmp_path, delete_retention_ms=0)
    w = Writer(log)
    w.plain([(b"z", b"1")])  # 0
    w.plain([(b"z", b"2")])  # 1
    opened = w.txn(1, [(b"a", b"open")])  # 2: open, in the same segment as all below
    w.txn(2, [(b"b", b"aborted")])  # 3
    w.marker(2, commit=False)  # 4
    w.marker(3, commit=True)  # 5: a marker with no data
    w.plain([(b"c", b"1")])  # 6
    w.marker(3, commit=True)  # 7
    log.roll(0)
    tail = _bytes_from(log, opened)
    assert len(log.segment_base_offsets()) == 2
    for now_ms in (10_000, 10_001, 10_002):
        _clean(log, now_ms)
        assert _bytes_from(log, opened) == tail
    assert read_uncommitted(log)[0] == (1, b"z", b"2")
    log.close()


def test_a_marker_in_the_active_segment_decides_its_transaction(tmp_path: Path) -> None:
    log = compacted_log(tmp_path)
    w = Writer(log)
    w.txn(1, [(b"a", b"aborted")])  # 0
    w.txn(2, [(b"a", b"committed")])  # 1
    w.plain([(b"a", b"plain")])  # 2
    log.roll(0)
    w.marker(1, commit=False)  # 3, in the active segment
    w.marker(2, commit=True)  # 4, in the active segment
    assert _clean(log) == 1
    assert read_uncommitted(log) == [(2, b"a", b"plain")]
    log.close()

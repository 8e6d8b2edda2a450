"""The cleaner removes transaction markers once nothing needs them: COMMIT markers whose
records were all compacted away, ABORT markers whose records are gone and whose
transaction the aborted index no longer lists, each a delete horizon
(``delete.retention.ms``) after the pass that first found it so; markers of
transactions with records left, each producer's last batches and markers a snapshot
replay may need stay, and readers see exactly what they saw before."""

from __future__ import annotations

from pathlib import Path

import pytest
from compaction_helpers import compacted_log
from compaction_txn_helpers import (
    Seen,
    Tracked,
    batches,
    committed_view,
    latest,
    read_uncommitted,
    unneeded_markers,
)

from headrace.log_broker._txn_partitions import checkpoint, load
from headrace.log_broker.records import _batches as _records
from headrace.log_broker.storage import PartitionLog
from headrace.log_broker.storage._cleaner import Cleaner, plan
from headrace.log_broker.storage._cleaner_checkpoint import (
    CLEANER_CHECKPOINT_FILE,
    CleanerCheckpoint,
    read_checkpoint,
    write_checkpoint,
)
from headrace.log_broker.storage._markers import HELD_BACK_RETRY_MS
from headrace.log_broker.storage._retain import delete_horizon
from headrace.transactions import OutOfOrderSequenceError

T0 = 5_000_000
RETENTION = 1_000


def _markers(log: PartitionLog) -> dict[int, _records.BatchHeader]:
    return {h.base_offset: h for _, h in batches(log) if h.is_control}


def _data_of(seen: list[Seen]) -> list[Seen]:
    return [r for r in seen if r[1] != b"filler"]


def _data(log: PartitionLog) -> list[Seen]:
    """Every record but the fillers that give each pass something dirty."""
    return _data_of(read_uncommitted(log))


def _size(log: PartitionLog) -> int:
    return sum(h.size for _, h in batches(log))


def _commit(t: Tracked, pid: int, pairs: list[tuple[bytes, bytes | None]]) -> int:
    t.txn(pid, pairs)
    return t.end(pid, commit=True)


def _abort(t: Tracked, pid: int, pairs: list[tuple[bytes, bytes | None]]) -> int:
    t.txn(pid, pairs)
    return t.end(pid, commit=False)


def _passes(t: Tracked, *times: int) -> None:
    """A cleaning run at each time, with something new and dirty before each."""
    for now_ms in times:
        t.plain([(b"filler", b"x")])
        t.log.roll(0)
        assert len(t.clean(now_ms)) == 1


def _retry(producer_id: int, sequence: int) -> list[_records.BatchHeader]:
    batch = _records.encode_batch(
        [_records.Record(0, 1_000, b"k", b"v")],
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=sequence,
        is_transactional=True,
    )
    return _records.parse_batches(bytearray(batch))


def test_markers_of_many_small_transactions_go_and_readers_see_the_same(
    tmp_path: Path,
) -> None:
    log = compacted_log(tmp_path, delete_retention_ms=RETENTION, segment_bytes=2_000)
    t = Tracked(log)
    for i in range(60):  # two producers, three keys, every fifth transaction aborted
        pid = 1 + i % 2
        pairs: list[tuple[bytes, bytes | None]] = [(f"k{i % 3}".encode(), f"{pid}/{i}".encode())]
        (_abort if i % 5 == 4 else _commit)(t, pid, pairs)
    log.roll(0)
    committed_before, uncommitted_before = t.committed(), read_uncommitted(log)
    aborted_before = len(t.live.aborted)
    size_before, markers_before = _size(log), len(_markers(log))
    assert markers_before == 60 and aborted_before == 12

    _passes(t, T0)  # the data goes; every marker was seen with its data, so all stay
    assert len(_markers(log)) == 60
    # Each key's latest committed value; the last (aborted) transaction's record went,
    # its batch stays empty as producer 2's last data batch.
    assert [r[2] for r in _data(log)] == [b"1/56", b"2/57", b"1/58"]
    _passes(t, T0 + 1)  # no data left: stamped, aborts released from the index
    stamped = [h for h in _markers(log).values() if delete_horizon(h) is not None]
    assert {delete_horizon(h) for h in stamped} == {T0 + 1 + RETENTION}
    assert len(stamped) == 60 - 4  # not those of transactions 56-59, which have batches
    assert len(t.index.released) == aborted_before - 1 and len(t.live.aborted) == 1
    _passes(t, T0 + RETENTION)  # a millisecond before the horizon
    assert len(_markers(log)) == 60
    checkpoint(t.live)  # the released index reaches the disk (and a snapshot the log end)
    _passes(t, T0 + 1 + RETENTION)

    assert len(_markers(log)) == 4 and unneeded_markers(log) == []
    assert _size(log) < size_before / 4
    # Readers see the remaining records exactly as before, told of aborts by the live
    # index or by one a restart rebuilds; the same latest value for every key.
    remaining = {r[0] for r in _data(log)}
    assert _data_of(t.committed()) == [r for r in committed_before if r[0] in remaining]
    assert latest(_data_of(t.committed())) == latest(committed_before)
    assert set(_data(log)) <= set(uncommitted_before)
    rebuilt, rebuilt_aborted, stable = committed_view(log)
    assert rebuilt == t.committed() and stable == t.live.last_stable_offset()
    assert rebuilt_aborted == t.live.aborted.entries()
    log.close()


def test_a_marker_stays_while_its_transaction_has_a_record_left(tmp_path: Path) -> None:
    log = compacted_log(tmp_path, delete_retention_ms=0)
    t = Tracked(log)
    kept = _commit(t, 1, [(b"a", b"1"), (b"b", b"1")])  # a stays, b is superseded
    abort = _abort(t, 2, [(b"c", b"x")])
    t.plain([(b"b", b"2")])
    _commit(t, 1, [(b"d", b"1")])
    superseded = _commit(t, 2, [(b"e", b"1")])
    _commit(t, 2, [(b"e", b"2")])
    log.roll(0)
    for now_ms in range(T0, T0 + 6):
        _passes(t, now_ms)
        checkpoint(t.live)
    markers = _markers(log)
    assert kept in markers and delete_horizon(markers[kept]) is None  # never even stamped
    assert abort not in markers and superseded not in markers
    assert unneeded_markers(log) == []
    assert latest(t.committed()) == {
        b"a": b"1",
        b"b": b"2",
        b"d": b"1",
        b"e": b"2",
        b"filler": b"x",
    }
    log.close()


def test_an_abort_marker_waits_until_no_restart_could_list_its_transaction(
    tmp_path: Path,
) -> None:
    log = compacted_log(tmp_path, delete_retention_ms=0)
    t = Tracked(log)
    abort = _abort(t, 1, [(b"a", b"x")])
    _commit(t, 1, [(b"b", b"1")])
    checkpoint(t.live)  # the index file lists the abort, and will until rewritten
    _passes(t, T0)  # the aborted record goes
    assert abort in _markers(log) and len(t.live.aborted) == 1
    _passes(t, T0 + 1)  # released from the live index, stamped
    assert t.index.released == [(1, abort)] and len(t.live.aborted) == 0
    assert delete_horizon(_markers(log)[abort]) == T0 + 1
    _passes(t, T0 + 2, T0 + 3)  # past its horizon, but a restart would still list it
    assert abort in _markers(log)
    assert [a.last_offset for a in committed_view(log)[1]] == [abort]
    checkpoint(t.live)
    _passes(t, T0 + 4)
    assert abort not in _markers(log)
    assert committed_view(log)[1] == []
    log.close()


def test_without_an_aborted_index_abort_markers_are_left_untouched(tmp_path: Path) -> None:
    log = compacted_log(tmp_path, delete_retention_ms=0)
    t = Tracked(log)
    abort = _abort(t, 1, [(b"a", b"x")])
    commit = _commit(t, 1, [(b"a", b"1")])
    _commit(t, 1, [(b"b", b"1")])
    log.roll(0)
    original = bytes(log.read(abort, 1 << 20))[: _markers(log)[abort].size]
    for now_ms in range(T0, T0 + 4):
        t.plain([(b"a", b"2")])
        log.roll(0)
        Cleaner().run([log], now_ms, lambda _: t.live.last_stable_offset())
    assert bytes(log.read(abort, 1 << 20))[: len(original)] == original
    assert commit not in _markers(log)
    log.close()


def test_a_pass_asks_for_no_revisit_for_abort_markers_it_cannot_release(
    tmp_path: Path,
) -> None:
    log = compacted_log(tmp_path, delete_retention_ms=0)
    t = Tracked(log)
    _abort(t, 1, [(b"a", b"x")])
    _commit(t, 1, [(b"b", b"1")])
    log.roll(0)
    assert len(Cleaner().run([log], T0, lambda _: t.live.last_stable_offset())) == 1
    assert read_uncommitted(log) == [(2, b"b", b"1")]  # the aborted record went
    assert read_checkpoint(log.directory / CLEANER_CHECKPOINT_FILE).revisit_ms is None
    log.close()


def test_a_marker_a_snapshot_replay_needs_stays_until_a_later_snapshot(tmp_path: Path) -> None:
    log = compacted_log(tmp_path, delete_retention_ms=0)
    t = Tracked(log)
    t.txn(1, [(b"a", b"1")])  # 0
    checkpoint(t.live)  # a snapshot at 1: producer 1's transaction is open there
    marker = t.end(1, commit=True)  # 1
    t.plain([(b"a", b"2")])
    _commit(t, 1, [(b"b", b"1")])  # producer 1's last batches come later
    log.roll(0)
    _passes(t, T0, T0 + 1, T0 + 2, T0 + 3)
    # Its record went, and its horizon passed; but a restart would replay from the
    # snapshot, where the transaction is open, and needs the marker to close it.
    assert marker in _markers(log)
    checkpoint(t.live)
    t.plain([(b"c", b"1")])
    checkpoint(t.live)  # two snapshots past the marker: the one at 1 is dropped
    _passes(t, T0 + 4)
    assert marker not in _markers(log)
    reloaded = load(log)
    assert reloaded.producers.ongoing() == {}
    assert reloaded.last_stable_offset() == log.log_end_offset
    log.close()


def test_a_restart_from_an_older_snapshot_goes_on_from_the_producers_last_sequence(
    tmp_path: Path,
) -> None:
    log = compacted_log(tmp_path, delete_retention_ms=0)
    t = Tracked(log)
    _commit(t, 7, [(b"a", b"1")])  # sequence 0
    checkpoint(t.live)  # producer 7 at sequence 0
    _commit(t, 7, [(b"b", b"1")])  # sequence 1, then superseded by the plain write
    t.plain([(b"b", b"2")])
    log.roll(0)
    _passes(t, T0, T0 + 1, T0 + 2)
    log.close()

    reopened = compacted_log(tmp_path, delete_retention_ms=0)  # no clean shutdown snapshot
    state = load(reopened)
    entry = state.producers.entry(7)
    assert entry is not None and entry.last_seq == 1
    assert state.producers.validate(_retry(7, 2)) is not None  # the next one goes on
    with pytest.raises(OutOfOrderSequenceError):
        state.producers.validate(_retry(7, 3))
    reopened.close()


def test_a_quiet_log_is_cleaned_again_when_its_markers_may_go(tmp_path: Path) -> None:
    log = compacted_log(tmp_path, delete_retention_ms=RETENTION)
    t = Tracked(log)
    for i in range(5):
        _commit(t, 1, [(b"a", f"{i}".encode())])
    t.plain([(b"a", b"last")])
    log.roll(0)
    assert len(t.clean(T0)) == 1  # no writes from here on
    stored = read_checkpoint(log.directory / CLEANER_CHECKPOINT_FILE)
    assert stored.revisit_ms == T0  # its data went, its markers can be stamped at once
    due = plan(log, T0)
    assert due is not None and due.revisit and due.dirty == []
    assert len(t.clean(T0)) == 1
    stored = read_checkpoint(log.directory / CLEANER_CHECKPOINT_FILE)
    assert stored.revisit_ms == T0 + RETENTION
    assert plan(log, T0 + RETENTION - 1) is None
    assert len(t.clean(T0 + RETENTION)) == 1
    # Producer 1's last batches stay; nothing else is left to revisit.
    assert list(_markers(log)) == [9]
    assert read_checkpoint(log.directory / CLEANER_CHECKPOINT_FILE).revisit_ms is None
    assert plan(log, T0 + 10 * RETENTION) is None
    log.close()


def test_a_held_back_marker_is_retried_a_little_later(tmp_path: Path) -> None:
    log = compacted_log(tmp_path, delete_retention_ms=0)
    t = Tracked(log)
    _abort(t, 1, [(b"a", b"x")])
    _commit(t, 1, [(b"b", b"1")])
    checkpoint(t.live)
    log.roll(0)
    for now_ms in (T0, T0 + 1, T0 + 2):
        t.clean(now_ms)
    stored = read_checkpoint(log.directory / CLEANER_CHECKPOINT_FILE)
    assert stored.revisit_ms == T0 + 2 + HELD_BACK_RETRY_MS  # the index file lists it still
    log.close()


def test_delete_retention_is_honoured_per_topic(tmp_path: Path) -> None:
    short = Tracked(compacted_log(tmp_path / "short", delete_retention_ms=10))
    long = Tracked(compacted_log(tmp_path / "long", delete_retention_ms=10_000))
    for t in (short, long):
        for i in range(4):
            _commit(t, 1, [(b"a", f"{i}".encode())])
        _passes(t, T0, T0 + 1, T0 + 20)
    assert list(_markers(short.log)) == [7]
    assert len(_markers(long.log)) == 4
    assert {delete_horizon(h) for h in list(_markers(long.log).values())[:3]} == {T0 + 1 + 10_000}
    short.log.close()
    long.log.close()


def test_cleaner_checkpoint_keeps_the_revisit_time_and_reads_older_files(
    tmp_path: Path,
) -> None:
    path = tmp_path / CLEANER_CHECKPOINT_FILE
    stored = CleanerCheckpoint(40, ((10, 5), (40, 9)), revisit_ms=1_234)
    write_checkpoint(path, stored)
    assert read_checkpoint(path) == stored
    write_checkpoint(path, CleanerCheckpoint(40, ((40, 9),)))
    assert read_checkpoint(path).revisit_ms is None
    path.write_text("1\n40\n10 5\n40 9\n", encoding="ascii")  # written before revisits
    assert read_checkpoint(path) == CleanerCheckpoint(40, ((10, 5), (40, 9)))
    path.write_text("2\n40\n", encoding="ascii")  # cut short
    assert read_checkpoint(path) == CleanerCheckpoint()

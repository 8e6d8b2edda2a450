"""A partition's transaction state (``PartitionTxn``) releases aborted transactions to
the log cleaner: ``release`` answers False, and queues the entry, until a checkpoint
on the loop has dropped it from memory and written an index file without it; a
restart answers from the file it loaded; and a cleaner given the state itself removes
abort markers only then, leaving a log whose rebuilt index, from the newest snapshot or
an older one, names no transaction whose marker is gone."""

from __future__ import annotations

import asyncio
import random
import threading
from pathlib import Path

from compaction_helpers import compacted_log
from compaction_txn_helpers import (
    Seen,
    Tracked,
    batches,
    committed_view,
    latest,
    read_committed,
    unneeded_markers,
)

from headrace.log_broker._txn_partitions import (
    ABORTED_INDEX,
    PartitionTxn,
    PartitionTxns,
    checkpoint,
    load,
)
from headrace.log_broker.records import _batches as _records
from headrace.log_broker.storage import PartitionLog
from headrace.log_broker.storage._cleaner import Cleaner
from headrace.transactions import AbortedTxn, AbortedTxnIndex

T0 = 5_000_000


def _abort(t: Tracked, pid: int, key: bytes) -> int:
    t.txn(pid, [(key, b"aborted")])
    return t.end(pid, commit=False)


def _commit(t: Tracked, pid: int, key: bytes, value: bytes) -> int:
    t.txn(pid, [(key, value)])
    return t.end(pid, commit=True)


def _in_file(log: PartitionLog) -> set[tuple[int, int]]:
    data = (log.directory / ABORTED_INDEX).read_bytes()
    return {(e.producer_id, e.last_offset) for e in AbortedTxnIndex.from_bytes(data).entries()}


def _in_memory(state: PartitionTxn) -> set[tuple[int, int]]:
    return {(e.producer_id, e.last_offset) for e in state.aborted.entries()}


def _values(seen: list[Seen]) -> dict[bytes | None, bytes | None]:
    """Each key's latest value, but for the fillers that give each pass work."""
    return {k: v for k, v in latest(seen).items() if k != b"filler"}


def _abort_markers(log: PartitionLog) -> set[int]:
    return {
        h.base_offset
        for data, h in batches(log)
        if h.is_control
        and not _records.parse_control_record(_records.decode_records(data, h)[0]).commit
    }


def test_release_is_false_while_memory_or_the_file_lists_the_entry(tmp_path: Path) -> None:
    log = compacted_log(tmp_path)
    t = Tracked(log)
    abort = _abort(t, 1, b"a")
    other = _abort(t, 2, b"b")
    checkpoint(t.live)
    assert _in_file(log) == _in_memory(t.live) == {(1, abort), (2, other)}

    assert not t.live.release(1, abort)
    assert (1, abort) in _in_memory(t.live)  # only the loop's checkpoint drops it
    assert t.live.releasing
    assert t.live.drop_released() == 1
    assert _in_memory(t.live) == {(2, other)}
    assert not t.live.release(1, abort)  # gone from memory, but the file lists it
    assert t.live.release(2, abort)  # listed nowhere (another producer's marker)

    checkpoint(t.live)
    assert _in_file(log) == {(2, other)}
    assert t.live.release(1, abort)
    assert t.live.release(1, abort)  # and stays released
    assert not t.live.release(2, other)  # untouched: queued now, not dropped yet
    assert (2, other) in _in_memory(t.live)
    log.close()


def test_an_entry_newer_than_the_last_file_waits_for_a_checkpoint(tmp_path: Path) -> None:
    log = compacted_log(tmp_path)
    t = Tracked(log)
    _commit(t, 1, b"a", b"1")
    txns = PartitionTxns()
    state = txns.get(log)  # loaded from the log alone: no file a restart would read
    assert txns.checkpoint_all() == 1 and not state.changed
    t.writer.txn(1, [(b"b", b"x")])
    marker = t.writer.marker(1, commit=False)  # past the file: memory may list it
    # The state was not told of these appends, so it does not list the transaction;
    # release cannot know that from the cleaner's thread and asks the loop.
    assert (1, marker) not in _in_memory(state)
    assert not state.release(1, marker)
    assert not state.changed
    assert txns.checkpoint_all() == 1  # a queued release is reason enough to write
    assert state.release(1, marker)
    assert txns.checkpoint_all() == 0
    log.close()


def test_a_restart_answers_from_the_index_file_it_loaded(tmp_path: Path) -> None:
    log = compacted_log(tmp_path)
    t = Tracked(log)
    released = _abort(t, 1, b"a")
    listed = _abort(t, 1, b"b")
    assert not t.live.release(1, released)
    checkpoint(t.live)
    assert t.live.release(1, released)

    restarted = load(log)
    assert _in_memory(restarted) == {(1, listed)}
    assert restarted.release(1, released)
    assert not restarted.release(1, listed)
    log.close()

    # Without a snapshot a restart does not read the index file; nor then does release.
    for snapshot in tmp_path.glob("t-0/*.producer_snapshot"):
        snapshot.unlink()
    reopened = compacted_log(tmp_path)
    rebuilt = load(reopened)
    assert _in_memory(rebuilt) == {(1, released), (1, listed)}  # both markers have data
    assert not rebuilt.release(1, released)
    reopened.close()


async def test_release_from_a_worker_thread_while_the_loop_owns_the_state(
    tmp_path: Path,
) -> None:
    log = compacted_log(tmp_path)
    t = Tracked(log)
    markers = [_abort(t, i % 3, f"k{i}".encode()) for i in range(60)]
    checkpoint(t.live)
    pids = {offset: i % 3 for i, offset in enumerate(markers)}
    wanted = set(random.Random(3).sample(markers, 30))
    answered: dict[int, bool] = {}
    rounds = 0
    stop = threading.Event()
    loop, round_done = asyncio.get_running_loop(), asyncio.Event()

    def cleaner() -> None:  # asks again and again, as passes do, from its own thread
        nonlocal rounds
        while not stop.is_set():
            for offset in wanted:
                answered[offset] = t.live.release(pids[offset], offset)
            rounds += 1
            loop.call_soon_threadsafe(round_done.set)

    async def rounds_past(count: int) -> None:
        while rounds < count:
            round_done.clear()
            await round_done.wait()

    worker = asyncio.create_task(asyncio.to_thread(cleaner))
    for i in range(40):  # the loop meanwhile aborts more and checkpoints now and then
        _abort(t, 5, f"new{i}".encode())
        if i % 10 == 9:
            checkpoint(t.live)
        await asyncio.sleep(0.001)
    await rounds_past(1)  # every wanted entry asked for at least once by now
    checkpoint(t.live)
    await rounds_past(rounds + 2)  # a whole round after that checkpoint
    stop.set()
    await worker
    assert set(answered) == wanted and all(answered.values())
    left = _in_memory(t.live)
    assert not {(pids[o], o) for o in wanted} & (left | _in_file(log))
    assert {(pids[o], o) for o in markers if o not in wanted} <= left  # nothing else went
    assert len(left) == 30 + 40
    log.close()


def test_a_cleaner_given_the_state_removes_abort_markers_once_released(
    tmp_path: Path,
) -> None:
    log = compacted_log(tmp_path, delete_retention_ms=100, segment_bytes=2_000)
    t = Tracked(log)
    aborted: list[AbortedTxn] = []
    for i in range(60):  # each producer commits right after each of its aborts
        pid, key = 1 + i % 2, f"k{i % 4}".encode()
        if i % 3 == 0:
            first = t.txn(pid, [(key, b"aborted")])
            aborted.append(AbortedTxn(pid, first, t.end(pid, commit=False), 0))
        _commit(t, pid, key, f"{pid}/{i}".encode())
    _commit(t, 1, b"only", b"after an abort")
    assert _abort_markers(log) == {a.last_offset for a in aborted}
    committed_before = _values(t.committed())
    cleaner = Cleaner()

    def run(now_ms: int) -> None:
        t.plain([(b"filler", b"x")])
        log.roll(0)
        cleaner.run([log], now_ms, lambda _: t.live.last_stable_offset(), lambda _: t.live)

    for now_ms in (T0, T0 + 1, T0 + 200):  # data gone, markers stamped, horizon passed
        run(now_ms)
    assert len(_abort_markers(log)) == len(aborted)  # no checkpoint yet: none released
    assert t.live.releasing and len(t.live.aborted) == len(aborted)
    checkpoint(t.live)
    run(T0 + 201)

    assert _abort_markers(log) == set() and unneeded_markers(log) == []
    assert len(t.live.aborted) == 0 and _in_file(log) == set()
    assert _values(t.committed()) == committed_before
    # A rebuild from the cleaned log lists no abort either, and reads the same.
    seen, rebuilt, stable = committed_view(log)
    assert rebuilt == [] and stable == t.live.last_stable_offset()
    assert _values(seen) == committed_before
    # What the release guards against: a reader still told of an aborted transaction
    # whose marker went skips the producer's later committed records.
    assert _values(read_committed(log, aborted[-1:], stable)) != committed_before
    log.close()


def test_a_rebuild_from_an_older_snapshot_lists_only_transactions_with_their_marker(
    tmp_path: Path,
) -> None:
    log = compacted_log(tmp_path, delete_retention_ms=0, segment_bytes=2_000)
    t = Tracked(log)
    for i in range(40):
        pid, key = 1 + i % 2, f"k{i % 3}".encode()
        if i == 20:
            t.txn(pid, [(key, b"aborted, open at the snapshot")])
            checkpoint(t.live)  # the older snapshot: producer 1 has a transaction open
            t.end(pid, commit=False)
        elif i % 4 == 0:
            _abort(t, pid, key)
        _commit(t, pid, key, f"{pid}/{i}".encode())
    committed = _values(t.committed())
    cleaner = Cleaner()
    for now_ms in (T0, T0 + 1, T0 + 2):  # data gone; stamped and released; removed
        t.plain([(b"filler", b"x")])
        log.roll(0)
        cleaner.run([log], now_ms, lambda _: t.live.last_stable_offset(), lambda _: t.live)
        if now_ms == T0 + 1:
            checkpoint(t.live)
    kept = _abort_markers(log)
    assert 0 < len(kept) <= 2 and unneeded_markers(log) == []  # held for the snapshot
    assert len(t.live.aborted) == 0
    log.close()

    snapshots = sorted(tmp_path.glob("t-0/*.producer_snapshot"))
    snapshots[-1].unlink()  # as if the newest was lost: replay from the older one
    reopened = compacted_log(tmp_path, delete_retention_ms=0, segment_bytes=2_000)
    rebuilt = load(reopened)
    assert rebuilt.snapshot_offset == int(snapshots[0].name.split(".")[0])
    # The rebuild may list a transaction the live index had released, but only one
    # whose marker the cleaner kept: a reader skips nothing but that transaction.
    assert {e.last_offset for e in rebuilt.aborted.entries()} <= kept
    seen = read_committed(reopened, rebuilt.aborted.entries(), rebuilt.last_stable_offset())
    assert _values(seen) == committed
    reopened.close()

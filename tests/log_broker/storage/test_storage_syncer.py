from __future__ import annotations

import asyncio
import os
import random
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from storage_batches import all_records, batch, open_log

from headrace.log_broker.storage import GroupSyncer, KafkaStorageError, PartitionLog, _fsyncs, _log
from headrace.log_broker.storage import _syncer as syncer_module
from headrace.log_broker.storage._fsyncs import Outcome


@pytest.fixture(autouse=True, params=["compiled", "python"])
def fsync_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test twice: with the C extension's one-GIL-release sync, and with the
    fallback an install without a C compiler has."""
    if request.param == "python":
        monkeypatch.setattr(_fsyncs, "_compiled", None)
    assert _fsyncs.compiled() == (request.param == "compiled")
    return str(request.param)


@pytest.fixture
def fsync_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts every fsync and fdatasync made (by any thread, in Python or through the
    compiled sync) while the test runs."""
    calls: list[int] = []

    def counting(real: Callable[[int], None]) -> Callable[[int], None]:
        def count(fd: int) -> None:
            calls.append(fd)
            real(fd)

        return count

    for name in ("fsync", "fdatasync"):
        monkeypatch.setattr(os, name, counting(getattr(os, name)))
    compiled = _fsyncs._compiled
    if compiled is not None:

        def counted(ops: list[tuple[int, bool]], threads: int) -> list[tuple[int, float, float]]:
            calls.extend(fd for fd, _ in ops)
            return compiled(ops, threads)

        monkeypatch.setattr(_fsyncs, "_compiled", counted)
    return calls


def _before_sync(log: PartitionLog, hook: Callable[[], None]) -> None:
    """Run ``hook`` each time a sync of ``log`` begins (the syncer's seam into a log)."""
    real = log.begin_sync

    def begin() -> _log.SyncPlan | None:
        hook()
        return real()

    log.begin_sync = begin  # type: ignore[method-assign]


def _break_syncs(log: PartitionLog) -> None:
    """Make every sync of ``log`` fail as a real fsync of a closed file does (EBADF)."""
    real = log.begin_sync
    read, write = os.pipe()
    os.close(read)
    os.close(write)

    def begin() -> _log.SyncPlan | None:
        plan = real()
        if plan is not None:
            plan.ops = [(write, True)]
        return plan

    log.begin_sync = begin  # type: ignore[method-assign]


async def _produce(syncer: GroupSyncer, log: PartitionLog, delay: float = 0.0) -> int:
    if delay:
        await asyncio.sleep(delay)
    end = log.append(batch(2), now_ms=0).last_offset + 1
    await syncer.sync(log)
    assert log.flushed_offset >= end  # the promise: durable before we answer
    return end


async def test_concurrent_requests_share_fsyncs(tmp_path: Path, fsync_calls: list[int]) -> None:
    log = open_log(tmp_path)
    fsync_calls.clear()  # opening syncs what it created
    syncer = GroupSyncer()
    requests = 200
    await asyncio.gather(*(_produce(syncer, log) for _ in range(requests)))
    # All 200 were appended before the first round began: one round, one log sync
    # (data file and its two indexes, plus the directory once).
    assert syncer.fsyncs == 1 and syncer.rounds == 1
    assert len(fsync_calls) <= 4
    assert log.flushed_offset == log.log_end_offset == 2 * requests
    syncer.close()
    log.close()


async def test_staggered_requests_still_coalesce(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    # A disk's fsync latency, whatever backs the test directory.
    _before_sync(log, lambda: time.sleep(0.002))
    syncer = GroupSyncer()
    rng = random.Random(7)
    requests = 300
    await asyncio.gather(*(_produce(syncer, log, rng.uniform(0, 0.02)) for _ in range(requests)))
    # Arrivals span ~20 ms and a round takes >= 2 ms: about ten rounds, not 300.
    assert syncer.fsyncs <= syncer.rounds <= 30, (syncer.fsyncs, syncer.rounds)
    assert log.flushed_offset == log.log_end_offset
    syncer.close()
    log.close()


async def test_one_round_syncs_each_waiting_log_once(tmp_path: Path) -> None:
    logs = [open_log(tmp_path / str(i)) for i in range(5)]
    syncer = GroupSyncer()
    await asyncio.gather(*(_produce(syncer, log) for log in logs for _ in range(20)))
    assert syncer.fsyncs == 5 and syncer.rounds == 1
    syncer.close()
    for log in logs:
        log.close()


async def test_requests_during_a_round_wait_for_the_next(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    syncer = GroupSyncer()
    syncer.inline, syncer.sync_seconds = False, 1.0  # a slow disk: rounds in threads
    started, release = threading.Event(), threading.Event()

    def slow_sync() -> None:
        started.set()
        release.wait(5)

    _before_sync(log, slow_sync)
    first = asyncio.ensure_future(_produce(syncer, log))
    await asyncio.to_thread(started.wait, 5)
    # Appended while the first round's fsync is under way: needs another round.
    second = asyncio.ensure_future(_produce(syncer, log))
    await asyncio.sleep(0.01)
    assert not second.done()
    release.set()
    assert await first == 2 and await second == 4
    assert syncer.rounds == 2
    syncer.close()
    log.close()


async def test_already_flushed_and_disabled_need_no_fsync(
    tmp_path: Path, fsync_calls: list[int]
) -> None:
    log = open_log(tmp_path)
    log.append(batch(1), now_ms=0)
    log.sync()
    fsync_calls.clear()
    syncer = GroupSyncer()
    await syncer.sync(log)
    off = GroupSyncer(enabled=False)
    log.append(batch(1), now_ms=0)
    await off.sync(log)
    assert fsync_calls == [] and syncer.rounds == 0
    assert log.flushed_offset == 1  # never mind: --fsync never promises nothing
    log.close()


async def test_fsync_failure_reaches_every_waiter(tmp_path: Path) -> None:
    log = open_log(tmp_path)
    syncer = GroupSyncer()
    real_begin = log.begin_sync
    _break_syncs(log)
    results = await asyncio.gather(
        *(_produce(syncer, log) for _ in range(3)), return_exceptions=True
    )
    assert all(isinstance(r, KafkaStorageError) and r.retriable for r in results)
    assert all("EBADF" in str(r) for r in results)  # the errno os.fsync would raise
    assert log.flushed_offset == 0
    # The failed sync left its files to the next one, which makes them durable.
    log.begin_sync = real_begin  # type: ignore[method-assign]
    await syncer.sync(log)
    assert log.flushed_offset == log.log_end_offset == 6
    syncer.close()
    log.close()


def test_sync_from_a_thread_while_appending(tmp_path: Path) -> None:
    log = open_log(tmp_path, segment_bytes=len(batch(2)) * 5)
    stop = threading.Event()
    errors: list[BaseException] = []

    def syncing() -> None:
        try:
            while not stop.is_set():
                before = log.log_end_offset
                log.sync()
                assert log.flushed_offset >= before
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    worker = threading.Thread(target=syncing)
    worker.start()
    try:
        for _ in range(300):
            log.append(batch(2), now_ms=0)
    finally:
        stop.set()
        worker.join()
    assert errors == []
    log.sync()
    assert log.flushed_offset == log.log_end_offset == 600
    assert [r.offset for r in all_records(log)] == list(range(600))
    log.close()


def test_files_removed_during_a_sync_are_closed_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = open_log(tmp_path, segment_bytes=len(batch(2)), retention_bytes=0)
    for _ in range(4):
        log.append(batch(2), now_ms=0)
    oldest_fd = log._segments[0].fd
    inside, release = threading.Event(), threading.Event()
    real: Callable[[int], None] = os.fsync

    def blocking(fd: int) -> None:
        if threading.current_thread() is worker:
            inside.set()
            release.wait(5)
        real(fd)

    monkeypatch.setattr(os, "fsync", blocking)
    worker = threading.Thread(target=log.sync)
    worker.start()
    assert inside.wait(5)
    assert log.apply_retention(0) == 3  # deletes segments the sync is holding
    os.fstat(oldest_fd)  # still open: the sync may be fsyncing it
    release.set()
    worker.join()
    with pytest.raises(OSError):
        os.fstat(oldest_fd)
    assert log.flushed_offset == 8
    log.close()


async def test_quick_syncs_run_on_the_event_loop_and_slow_ones_in_worker_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = open_log(tmp_path)
    # The syncer is told each fsync took the disk latency the test sets: the wall
    # clock of a busy machine (a real fsync of several ms, a preempted thread) would
    # decide for it. The fsyncs themselves are real.
    real_sync_files = _fsyncs.sync_files
    disk = {"latency": 0.0}
    threads: list[int] = []

    def timed_sync_files(ops: list[tuple[int, bool]], threads_: int = 1) -> list[Outcome]:
        threads.append(threading.get_ident())
        outcomes = real_sync_files(ops, threads_)
        return [o._replace(seconds=disk["latency"]) for o in outcomes]

    monkeypatch.setattr(_fsyncs, "sync_files", timed_sync_files)
    syncer = GroupSyncer()
    loop_thread = threading.get_ident()
    for _ in range(5):
        await _produce(syncer, log)
    assert syncer.inline and set(threads) == {loop_thread}
    disk["latency"] = 0.005  # a slow disk: the loop must not wait on it
    for _ in range(10):
        await _produce(syncer, log)
    assert not syncer.inline and threads[-1] != loop_thread
    disk["latency"] = 0.0
    for _ in range(40):
        await _produce(syncer, log)
    assert syncer.inline and threads[-1] == loop_thread
    syncer.close()
    log.close()


async def test_a_round_over_many_logs_hands_slices_to_the_workers(tmp_path: Path) -> None:
    logs = [open_log(tmp_path / str(i)) for i in range(40)]
    threads: dict[PartitionLog, int] = {}
    for log in logs:

        def record(log: PartitionLog = log) -> None:
            threads[log] = threading.get_ident()

        _before_sync(log, record)
    broken = logs[7]
    _break_syncs(broken)
    syncer = GroupSyncer(max_workers=4)
    syncer.sync_seconds = 0.001  # 40 such syncs exceed the inline budget
    for log in logs:
        log.append(batch(2), now_ms=0)
    failed = await syncer.sync_many(logs)
    # One round; the broken log's error is its own, the others are durable.
    assert syncer.rounds == 1 and syncer.fsyncs == 39
    assert list(failed) == [broken] and failed[broken].retriable
    assert all(log.flushed_offset == 2 for log in logs if log is not broken)
    assert threading.get_ident() not in threads.values()
    assert 1 < len(set(threads.values())) <= 4  # slices side by side, one per worker
    syncer.close()
    for log in logs:
        log.close()


async def test_a_slice_syncs_its_files_in_one_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fsync_path: str
) -> None:
    """Each worker gives its whole slice to one ``sync_files`` call (one release of the
    GIL where compiled, a few slices a round); without the extension, one slice per
    worker thread as before."""
    logs = [open_log(tmp_path / str(i)) for i in range(40)]
    calls: list[int] = []
    real_sync_files = _fsyncs.sync_files

    def counted(ops: list[tuple[int, bool]], threads: int = 1) -> list[Outcome]:
        calls.append(len(ops))
        return real_sync_files(ops, threads)

    monkeypatch.setattr(_fsyncs, "sync_files", counted)
    syncer = GroupSyncer()
    syncer.sync_seconds = 0.001  # 40 such syncs exceed the inline budget
    for log in logs:
        log.append(batch(2), now_ms=0)
    assert await syncer.sync_many(logs) == {}
    assert sum(calls) == 40  # one fdatasync a log: its active segment's data
    expected = syncer_module.COMPILED_SLICES if fsync_path == "compiled" else 32
    assert len(calls) == expected
    syncer.close()
    for log in logs:
        log.close()

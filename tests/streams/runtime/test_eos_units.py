"""Exactly-once pieces without a broker: settings, the instance's transactional id, the
transactional commit's order and abort, snapshots of RocksDB stores, task opening, and
restore progress past transaction markers."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Mapping, Sequence
from pathlib import Path

import pytest
from runtime_apps import count_topology

from headrace.state import TaskCheckpoint
from headrace.streams import ConsumedRecord, StreamsConfig
from headrace.streams.runtime import AppSettings, SettingsError
from headrace.streams.runtime._client import FlushMark, FlushResult, TopicPartition
from headrace.streams.runtime._commit import Committer, TransactionSink
from headrace.streams.runtime._errors import (
    FencedError,
    SourceTopicDeletedError,
    TransactionAbortedError,
    TransactionError,
)
from headrace.streams.runtime._handlers import ErrorHandler
from headrace.streams.runtime._metrics import AppMetrics
from headrace.streams.runtime._restore import Restorer
from headrace.streams.runtime._rewind import instance_id, transactional_id
from headrace.streams.runtime._snapshots import TaskSnapshots
from headrace.streams.runtime._tasks import RuntimeTask, TaskManager

APP = "app"
CHANGELOG = (f"{APP}-counts-changelog", 0)
SOURCE = ("rt-input", 0)


def test_transaction_timeout_defaults_below_the_session_timeout() -> None:
    s = AppSettings.load(env={}, application_id=APP, processing_guarantee="exactly_once_v2")
    assert (s.exactly_once, s.commit_interval, s.transaction_timeout) == (True, 100, 5000)
    with pytest.raises(SettingsError, match="below session_timeout_ms"):
        AppSettings.load(env={}, application_id=APP, transaction_timeout_ms=10_000)


def test_the_transactional_id_is_stable_for_a_state_directory(tmp_path: Path) -> None:
    s = AppSettings.load(env={}, application_id=APP, state_dir=tmp_path)
    first = transactional_id(s)
    assert first.startswith(f"{APP}-") and transactional_id(s) == first
    other = AppSettings.load(env={}, application_id=APP, state_dir=tmp_path / "elsewhere")
    assert transactional_id(other) != first
    named = AppSettings.load(env={}, application_id=APP, state_dir=tmp_path, instance_id="node-7")
    assert (instance_id(named), transactional_id(named)) == ("node-7", f"{APP}-node-7")


class FakeTxnProducer:
    def __init__(self, steps: list[str], fail_commit: bool = False) -> None:
        self.steps = steps
        self.fail_commit = fail_commit
        self.in_transaction = False
        self.changelog_end = 0
        # When set, a flush finishes only once offsets were sent (as if they raced).
        self.flush_waits_for_offsets = False
        self._offsets_sent = asyncio.Event()
        self.flush_fails = self.offsets_fenced = False

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def send(self, records: Sequence[object]) -> None:
        if records:
            self.in_transaction = True
            self.steps.append("send")

    def mark(self) -> FlushMark:
        return {}

    async def flush(self, upto: FlushMark | None = None) -> FlushResult:
        self.steps.append("flush")
        if self.flush_waits_for_offsets:
            await asyncio.wait_for(self._offsets_sent.wait(), 5)
        if self.flush_fails:
            await asyncio.sleep(0.01)  # after the offsets' failure
            raise TransactionAbortedError("a batch failed inside the transaction")
        return FlushResult(next_offsets={CHANGELOG: self.changelog_end})

    async def send_offsets(self, offsets: Mapping[TopicPartition, int], group_id: str) -> None:
        self.steps.append(f"offsets {dict(offsets)} {group_id}")
        if self.offsets_fenced:
            raise FencedError("a newer instance took the transactional id")
        self.in_transaction = True
        self._offsets_sent.set()

    async def commit_transaction(
        self, offsets: Mapping[TopicPartition, int], group_id: str
    ) -> None:
        self.steps.append(f"commit {dict(offsets)} {group_id}")
        if self.fail_commit:
            raise TransactionError("coordinator went away")
        self.in_transaction = False

    async def abort_transaction(self) -> None:
        self.steps.append("abort")
        self.in_transaction = False

    def hold(self) -> None:
        self.steps.append("hold")

    async def release(self) -> None:
        self.steps.append("release")


class FakeConsumer:
    valid = True

    def generation_valid(self) -> bool:
        return self.valid

    async def while_sources_exist(self, commit: Awaitable[None]) -> None:
        await commit


def _records(start: int, n: int) -> list[ConsumedRecord]:
    return [
        ("rt-input", 0, i, 1000 + i, b"k%d" % (i % 3), b"v", ()) for i in range(start, start + n)
    ]


def _manager(root: Path) -> TaskManager:
    config = StreamsConfig(application_id=APP, state_dir=root)
    return TaskManager(
        count_topology(),
        config,
        root,
        {0: ("rt-input",)},
        {0: {"counts": CHANGELOG[0]}},
        lambda t: 1,
        lambda: 0,
        exactly_once=True,
    )


def _open(root: Path) -> RuntimeTask:
    task = _manager(root).open([SOURCE])[0]
    task.restored({})
    return task


def _count(task: RuntimeTask, key: bytes) -> int:
    return int(task.executor.stores["counts"].get(key) or b"0")


def _eos(
    steps: list[str], fail: bool = False, snapshot_ms: int = 0
) -> tuple[Committer, FakeTxnProducer, FakeConsumer]:
    producer = FakeTxnProducer(steps, fail)
    consumer = FakeConsumer()
    metrics = AppMetrics(APP)
    sink = TransactionSink(producer, consumer, APP)  # type: ignore[arg-type]
    handler = ErrorHandler("production", "fail", "dead", metrics)
    return Committer(producer, sink, handler, metrics, snapshot_ms), producer, consumer


async def test_offsets_commit_inside_the_transaction_and_then_the_stores_are_snapshotted(
    tmp_path: Path,
) -> None:
    task = _open(tmp_path)
    steps: list[str] = []
    committer, producer, _ = _eos(steps)
    await committer.send(task.process(SOURCE, _records(0, 6)))
    producer.changelog_end = 6
    await committer.commit([task])
    # The offsets join the transaction while its output is flushed; then it ends.
    assert steps == ["send", "flush", f"offsets {{{SOURCE!r}: 6}} {APP}", f"commit {{}} {APP}"]
    assert not task.dirty and task.committed == {SOURCE: 6}
    # No live checkpoint under exactly-once: the stores run ahead of it from now on.
    assert not (task.state_dir / ".checkpoint").exists()
    assert TaskSnapshots(task.state_dir).offsets() == {CHANGELOG: 6}
    task.close()


async def test_a_failed_commit_aborts_and_leaves_the_last_snapshot(tmp_path: Path) -> None:
    task = _open(tmp_path)
    steps: list[str] = []
    committer, producer, _ = _eos(steps)
    await committer.send(task.process(SOURCE, _records(0, 3)))
    producer.changelog_end = 3
    await committer.commit([task])
    producer.fail_commit = True
    await committer.send(task.process(SOURCE, _records(3, 3)))
    producer.changelog_end = 6
    with pytest.raises(TransactionError):
        await committer.commit([task])
    assert steps[-1] == "abort"
    assert task.dirty and task.committed == {SOURCE: 3}
    assert TaskSnapshots(task.state_dir).offsets() == {CHANGELOG: 3}
    task.close()
    assert not (task.state_dir / ".checkpoint").exists()  # a dirty task is never checkpointed


async def test_a_member_out_of_the_generation_does_not_commit(tmp_path: Path) -> None:
    task = _open(tmp_path)
    steps: list[str] = []
    committer, _, consumer = _eos(steps)
    consumer.valid = False
    await committer.send(task.process(SOURCE, _records(0, 2)))
    with pytest.raises(TransactionError, match="generation"):
        await committer.commit([task])
    assert not any(s.startswith("commit") for s in steps) and steps[-1] == "abort"
    task.close()


async def test_after_a_crash_the_task_reopens_from_its_snapshot_not_its_dirty_stores(
    tmp_path: Path,
) -> None:
    task = _open(tmp_path)
    committer, producer, _ = _eos([])
    await committer.send(task.process(SOURCE, _records(0, 6)))  # k0, k1, k2 twice each
    producer.changelog_end = 6
    await committer.commit([task])
    task.process(SOURCE, _records(6, 3))  # written to RocksDB, never committed
    assert _count(task, b"k0") == 3
    task.executor.close()  # the process dies: no clean close, no checkpoint
    reopened = _manager(tmp_path).open([SOURCE])[0]
    assert reopened.restore_from == {CHANGELOG: 6}  # only the tail after the snapshot
    assert _count(reopened, b"k0") == 2  # the aborted write is gone
    reopened.close()


async def test_a_clean_close_checkpoints_and_the_next_open_trusts_then_deletes_it(
    tmp_path: Path,
) -> None:
    task = _open(tmp_path)
    committer, producer, _ = _eos([], snapshot_ms=60_000)
    await committer.send(task.process(SOURCE, _records(0, 3)))
    producer.changelog_end = 3
    task.last_snapshot = 1e18  # no snapshot this time: the checkpoint must carry it
    await committer.commit([task])
    task.close()
    assert TaskCheckpoint(task.state_dir).read_checkpoint() == {CHANGELOG: 3}
    reopened = _manager(tmp_path).open([SOURCE])[0]
    assert reopened.restore_from == {CHANGELOG: 3} and _count(reopened, b"k0") == 1
    assert not (reopened.state_dir / ".checkpoint").exists()
    reopened.close()


class MarkerReader:
    """A read_committed changelog whose last offset is a commit marker: records end at
    offset 4, the position (and end) at 5."""

    def __init__(self) -> None:
        self.served = False

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def assign(self, partitions: object) -> None: ...

    async def seek(self, partition: TopicPartition, offset: int | None) -> None: ...

    async def end_offsets(self, partitions: object) -> dict[TopicPartition, int]:
        return {CHANGELOG: 5}

    async def position(self, partition: TopicPartition) -> int | None:
        return 5 if self.served else 0

    async def poll(
        self, timeout_ms: int, max_records: int
    ) -> dict[TopicPartition, list[tuple[int, bytes, bytes | None, int]]]:
        if self.served:
            return {}
        self.served = True
        return {CHANGELOG: [(i, b"k%d" % i, b"1", 0) for i in range(4)]}


async def test_restoring_ends_at_the_position_past_a_transaction_marker(tmp_path: Path) -> None:
    task = _manager(tmp_path).open([SOURCE])[0]
    restorer = Restorer(MarkerReader(), AppMetrics(APP), 100)
    assert not await restorer.add(task)
    assert await restorer.step(10) == [task] and task.running
    assert task.changelog_offsets == {CHANGELOG: 5}
    task.close()


async def test_the_offsets_join_the_transaction_while_its_output_is_flushed(
    tmp_path: Path,
) -> None:
    steps: list[str] = []
    committer, producer, _ = _eos(steps)
    producer.flush_waits_for_offsets = True  # one after the other, this never ends
    task = _open(tmp_path)
    await committer.send(task.process(SOURCE, _records(0, 3)))
    await committer.commit([task])
    assert steps[1:] == ["flush", f"offsets {{{SOURCE!r}: 3}} {APP}", f"commit {{}} {APP}"]
    assert task.committed == {SOURCE: 3}
    task.close()


async def test_a_fence_met_beside_a_failed_flush_is_the_error_raised(tmp_path: Path) -> None:
    steps: list[str] = []
    committer, producer, _ = _eos(steps)
    producer.flush_fails = producer.offsets_fenced = True
    task = _open(tmp_path)
    await committer.send(task.process(SOURCE, _records(0, 3)))
    # Fenced: no abort is tried (it would be refused); the caller takes a new producer.
    with pytest.raises(FencedError):
        await committer.commit([task])
    assert "abort" not in steps and task.committed == {}
    task.close()


async def test_a_begun_transaction_commits_beside_processing_and_holds_later_output(
    tmp_path: Path,
) -> None:
    task = _open(tmp_path)
    steps: list[str] = []
    committer, producer, _ = _eos(steps, snapshot_ms=60_000)
    await committer.send(task.process(SOURCE, _records(0, 3)))
    producer.changelog_end = 3
    await committer.begin([task])  # the first commit snapshots, so it runs whole
    assert steps[-2:] == [f"offsets {{{SOURCE!r}: 3}} {APP}", f"commit {{}} {APP}"]
    steps.clear()
    await committer.send(task.process(SOURCE, _records(3, 3)))
    await committer.begin([task])
    # Processing goes on while the transaction commits: its output is held for the next.
    await committer.send(task.process(SOURCE, _records(6, 2)))
    await committer.settle()
    assert steps == [
        "send",
        "hold",
        "send",
        "flush",
        f"offsets {{{SOURCE!r}: 6}} {APP}",
        f"commit {{}} {APP}",
        "release",
    ]
    assert task.committed == {SOURCE: 6}
    # Processed after the mark: not clean, so a close writes no checkpoint.
    assert task.dirty
    assert TaskSnapshots(task.state_dir).offsets() == {CHANGELOG: 3}
    task.close()


async def test_a_begun_transaction_that_fails_aborts_at_the_next_commit(tmp_path: Path) -> None:
    task = _open(tmp_path)
    steps: list[str] = []
    committer, producer, _ = _eos(steps, snapshot_ms=60_000)
    await committer.send(task.process(SOURCE, _records(0, 3)))
    await committer.begin([task])
    producer.fail_commit = True
    await committer.send(task.process(SOURCE, _records(3, 3)))
    await committer.begin([task])
    await asyncio.sleep(0.05)  # the transaction fails meanwhile, beside processing
    with pytest.raises(TransactionError):
        await committer.begin([task])
    assert steps[-1] == "abort" and "release" not in steps
    assert task.committed == {SOURCE: 3}
    task.close()


async def test_an_abort_stuck_behind_a_deleted_source_topic_gives_up(tmp_path: Path) -> None:
    """The producer's abort never ends (aiokafka retries the offsets of a deleted source
    topic): the consumer's watch gives it up, and the committer marks the producer
    broken instead of hanging the instance's shutdown."""
    steps: list[str] = []
    committer, producer, consumer = _eos(steps)
    never = asyncio.Event()

    async def stuck_abort() -> None:
        steps.append("abort")
        await never.wait()

    async def watched(commit: Awaitable[None]) -> None:
        attempt = asyncio.ensure_future(commit)
        await asyncio.sleep(0.05)  # the real watch confirms the topic gone, then cancels
        attempt.cancel()
        raise SourceTopicDeletedError("source topic rt-input no longer exists")

    producer.abort_transaction = stuck_abort  # type: ignore[method-assign]
    consumer.while_sources_exist = watched  # type: ignore[method-assign]
    await asyncio.wait_for(committer.abort(), 5)
    assert steps == ["abort"] and committer.broken

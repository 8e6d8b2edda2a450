"""The commit's order of steps, on fakes: stores, producer, offsets, then the checkpoint."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
from runtime_apps import count_topology

from headrace.state import TaskCheckpoint
from headrace.streams import ConsumedRecord, StreamsConfig, TaskExecutor
from headrace.streams.runtime import ClientError
from headrace.streams.runtime._checkpoints import CHECKPOINT_RECORDS, CheckpointPolicy
from headrace.streams.runtime._client import FlushMark, FlushResult, TopicPartition
from headrace.streams.runtime._commit import Committer
from headrace.streams.runtime._handlers import ErrorHandler
from headrace.streams.runtime._metrics import AppMetrics
from headrace.streams.runtime._tasks import RuntimeTask

CHANGELOG = ("app-counts-changelog", 0)
SOURCE = ("rt-input", 0)


class Journal:
    """The steps of a commit in order, each with the checkpoint on disk when it ran."""

    def __init__(self, checkpoint_dir: Path) -> None:
        self.steps: list[tuple[str, dict[TopicPartition, int]]] = []
        self.checkpoint_dir = checkpoint_dir

    def note(self, step: str) -> None:
        on_disk = TaskCheckpoint(self.checkpoint_dir).read_checkpoint()
        self.steps.append((step, on_disk))


class FakeProducer:
    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.sent: list[object] = []
        self.changelog_end = 0
        # Cleared: the broker has not acknowledged yet, and a flush waits.
        self.acknowledged = asyncio.Event()
        self.acknowledged.set()

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def send(self, records: Sequence[object]) -> None:
        self.journal.note("send")
        self.sent.extend(records)

    def mark(self) -> FlushMark:
        return {}

    async def flush(self, upto: FlushMark | None = None) -> FlushResult:
        self.journal.note("producer flush")
        await self.acknowledged.wait()
        return FlushResult(next_offsets={CHANGELOG: self.changelog_end})


class FakeOffsets:
    transactional = False

    def __init__(self, journal: Journal, fail: ClientError | None = None) -> None:
        self.journal = journal
        self.fail = fail
        self.committed: dict[TopicPartition, int] = {}

    async def commit(self, offsets: Mapping[TopicPartition, int]) -> None:
        self.journal.note("offset commit")
        if self.fail is not None:
            raise self.fail
        self.committed.update(offsets)


def _task(tmp_path: Path) -> RuntimeTask:
    config = StreamsConfig(application_id="app", state_dir=tmp_path)
    executor = TaskExecutor(count_topology(), 0, 0, config, state_dir=tmp_path)
    executor.open_stores()
    task = RuntimeTask(
        "0_0",
        executor,
        (SOURCE,),
        {"counts": CHANGELOG},
        tmp_path / "app" / "0_0",
        {CHANGELOG: None},
    )
    task.restored({})
    return task


def _committer(
    journal: Journal, offsets: FakeOffsets, every_records: int = CHECKPOINT_RECORDS
) -> tuple[Committer, FakeProducer]:
    metrics = AppMetrics("app")
    producer = FakeProducer(journal)
    handler = ErrorHandler("production", "fail", "dead", metrics)
    policy = CheckpointPolicy(every_records)
    return Committer(producer, offsets, handler, metrics, checkpoints=policy), producer


def _records(start: int, n: int) -> list[ConsumedRecord]:
    return [("rt-input", 0, i, 1000 + i, b"k", b"v", ()) for i in range(start, start + n)]


async def test_checkpoint_is_written_after_the_offsets_are_committed(tmp_path: Path) -> None:
    task = _task(tmp_path)
    journal = Journal(task.state_dir)
    offsets = FakeOffsets(journal)
    committer, producer = _committer(journal, offsets)
    await committer.send(task.process(SOURCE, _records(0, 3)))
    producer.changelog_end = 41
    await committer.commit([task], closing=True)
    assert offsets.committed == {SOURCE: 3}
    assert TaskCheckpoint(task.state_dir).read_checkpoint() == {CHANGELOG: 41}

    journal.steps.clear()
    await committer.send(task.process(SOURCE, _records(3, 2)))
    producer.changelog_end = 57
    await committer.commit([task], closing=True)
    steps = [name for name, _ in journal.steps]
    assert steps[-2:] == ["producer flush", "offset commit"]
    # While the offsets were being committed, the disk still held the old checkpoint.
    assert dict(journal.steps)["offset commit"] == {CHANGELOG: 41}
    assert offsets.committed == {SOURCE: 5}
    assert TaskCheckpoint(task.state_dir).read_checkpoint() == {CHANGELOG: 57}
    assert task.committed == {SOURCE: 5}
    task.close()


async def test_no_checkpoint_when_the_offset_commit_fails_in_a_rebalance(tmp_path: Path) -> None:
    task = _task(tmp_path)
    journal = Journal(task.state_dir)
    offsets = FakeOffsets(journal, ClientError("group rebalancing", retriable=True))
    committer, producer = _committer(journal, offsets)
    producer.changelog_end = 41
    await committer.send(task.process(SOURCE, _records(0, 1)))
    await committer.commit([task], closing=True)
    assert not (task.state_dir / ".checkpoint").exists()
    assert task.committed == {}
    # What the flushed state covers is still known, for the next successful commit.
    assert task.changelog_offsets == {CHANGELOG: 41}
    task.close()


async def test_a_fatal_offset_commit_error_propagates_and_writes_no_checkpoint(
    tmp_path: Path,
) -> None:
    task = _task(tmp_path)
    journal = Journal(task.state_dir)
    offsets = FakeOffsets(journal, ClientError("authorization failed", retriable=False))
    committer, _ = _committer(journal, offsets)
    await committer.send(task.process(SOURCE, _records(0, 1)))
    with pytest.raises(ClientError):
        await committer.commit([task], closing=True)
    assert not (task.state_dir / ".checkpoint").exists()
    task.close()


async def test_a_checkpoint_waits_until_enough_changelog_records_were_written(
    tmp_path: Path,
) -> None:
    task = _task(tmp_path)
    journal = Journal(task.state_dir)
    committer, producer = _committer(journal, FakeOffsets(journal), every_records=10)
    for end in (4, 9):
        producer.changelog_end = end
        await committer.commit([task])
        assert not (task.state_dir / ".checkpoint").exists()
    producer.changelog_end = 10
    await committer.commit([task])
    assert TaskCheckpoint(task.state_dir).read_checkpoint() == {CHANGELOG: 10}
    producer.changelog_end = 12
    await committer.commit([task])
    assert TaskCheckpoint(task.state_dir).read_checkpoint() == {CHANGELOG: 10}
    # A task that may close checkpoints whatever changed.
    await committer.commit([task], closing=True)
    assert TaskCheckpoint(task.state_dir).read_checkpoint() == {CHANGELOG: 12}
    task.close()


async def test_a_begun_commit_lets_processing_go_on_and_commits_only_acknowledged_input(
    tmp_path: Path,
) -> None:
    task = _task(tmp_path)
    journal = Journal(task.state_dir)
    offsets = FakeOffsets(journal)
    committer, producer = _committer(journal, offsets)
    await committer.send(task.process(SOURCE, _records(0, 3)))
    producer.acknowledged.clear()
    await committer.begin([task])
    # The broker has not acknowledged: nothing is committed, and processing goes on.
    await committer.send(task.process(SOURCE, _records(3, 2)))
    await asyncio.sleep(0.01)
    assert committer.in_flight
    assert offsets.committed == {}
    # The next interval's commit finds it still waiting: skipped, not queued behind it.
    await committer.begin([task])
    assert offsets.committed == {}
    producer.acknowledged.set()
    await committer.settle()
    # The offsets of the mark, not of what was processed after it.
    assert offsets.committed == {SOURCE: 3}
    assert task.committed == {SOURCE: 3}
    await committer.begin([task])
    await committer.settle()
    assert offsets.committed == {SOURCE: 5}
    task.close()


async def test_what_a_begun_commit_raised_is_raised_by_the_next_one(tmp_path: Path) -> None:
    task = _task(tmp_path)
    journal = Journal(task.state_dir)
    offsets = FakeOffsets(journal, ClientError("authorization failed", retriable=False))
    committer, _ = _committer(journal, offsets)
    await committer.send(task.process(SOURCE, _records(0, 1)))
    await committer.begin([task])
    await committer.settle(keep_error=True)
    with pytest.raises(ClientError):
        await committer.begin([task])
    task.close()

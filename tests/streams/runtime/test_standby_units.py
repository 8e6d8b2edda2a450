"""A standby task against the real broker, in one process: it applies only committed
changelog records under exactly-once, checkpoints what it applied, resumes from that
checkpoint, and hands its open stores to the active task that replaces it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from rtprocs import Cluster
from runtime_apps import INPUT, count_topology

from headrace.state import TaskCheckpoint
from headrace.streams import StreamsConfig
from headrace.streams.runtime import AppSettings
from headrace.streams.runtime._aiokafka import AiokafkaChangelogReader
from headrace.streams.runtime._metrics import AppMetrics
from headrace.streams.runtime._standby import StandbyUpdater
from headrace.streams.runtime._tasks import TaskManager

pytestmark = pytest.mark.slow
APP = "standby-units"
CHANGELOG = f"{APP}-counts-changelog"


async def _write_changelog(bootstrap: str) -> None:
    """Three transactions: committed, aborted, committed."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics(
            [NewTopic(CHANGELOG, 1, 1, topic_configs={"cleanup.policy": "compact"})]
        )
    finally:
        await admin.close()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"{APP}-writer")
    await producer.start()
    try:
        for writes, commit in (
            ({b"k1": b"1", b"k2": b"1"}, True),
            ({b"k1": b"99", b"k3": b"99"}, False),
            ({b"k2": b"2"}, True),
        ):
            await producer.begin_transaction()
            for key, value in writes.items():
                await producer.send_and_wait(CHANGELOG, value, key=key, partition=0)
            if commit:
                await producer.commit_transaction()
            else:
                await producer.abort_transaction()
    finally:
        await producer.stop()


def _manager(tmp_path: Path) -> TaskManager:
    return TaskManager(
        count_topology(),
        StreamsConfig(application_id=APP, state_dir=tmp_path),
        tmp_path,
        {0: (INPUT,)},
        {0: {"counts": CHANGELOG}},
        lambda topic: 1,
        lambda: 0,
        exactly_once=True,
    )


async def _catch_up(updater: StandbyUpdater, reader: AiokafkaChangelogReader, task_id: str) -> int:
    end = (await reader.end_offsets([(CHANGELOG, 0)]))[(CHANGELOG, 0)]
    deadline = time.monotonic() + 20
    while updater.tasks[task_id].positions.get((CHANGELOG, 0)) != end:
        assert time.monotonic() < deadline, "the standby did not reach the changelog's end"
        await updater.step(100)
    return end


async def test_standby_applies_committed_records_checkpoints_and_is_promoted(
    cluster: Cluster, tmp_path: Path
) -> None:
    await _write_changelog(cluster.bootstrap)
    settings = AppSettings.load(
        env={},
        application_id=APP,
        bootstrap_servers=cluster.bootstrap,
        processing_guarantee="exactly_once_v2",
        state_dir=tmp_path,
    )
    reader = AiokafkaChangelogReader(settings)
    await reader.start()
    try:
        tasks = _manager(tmp_path)
        metrics = AppMetrics(APP)
        updater = StandbyUpdater(reader, metrics, 500)
        await updater.add(tasks.open_standby("0_0"))
        end = await _catch_up(updater, reader, "0_0")
        standby = updater.tasks["0_0"]
        store = standby.executor.stores["counts"]
        # read_committed: the aborted transaction's writes never reach the standby
        assert (store.get(b"k1"), store.get(b"k2"), store.get(b"k3")) == (b"1", b"2", None)
        assert standby.applied == 3
        assert (
            metrics.registry.get_sample_value(
                "headrace_streams_standby_records_total", {"task": "0_0", "store": "counts"}
            )
            == 3
        )
        assert tasks.local_state() == {} and updater.offset_sums() == {"0_0": end}
        updater.checkpoint(force=True)
        assert TaskCheckpoint(standby.state_dir).read_checkpoint() == {(CHANGELOG, 0): end}

        # Closed and opened again: it resumes from its checkpoint and its stores are kept.
        removed = await updater.remove("0_0")
        assert removed is standby
        standby.close()
        again = _manager(tmp_path).open_standby("0_0")
        assert again.positions == {(CHANGELOG, 0): end}
        assert again.executor.stores["counts"].get(b"k2") == b"2"

        # Promoted: the active task runs on the same open stores, restoring from the end.
        await updater.add(again)
        manager = _manager(tmp_path)
        taken = await updater.remove("0_0")
        assert taken is not None
        [task] = manager.open([(INPUT, 0)], {"0_0": taken})
        assert task.executor is again.executor and task.restore_from == {(CHANGELOG, 0): end}
        # under exactly-once the active stores run ahead of any checkpoint from now on
        assert TaskCheckpoint(task.state_dir).read_checkpoint() == {}
        assert task.snapshots is not None
        task.close()
    finally:
        await reader.stop()

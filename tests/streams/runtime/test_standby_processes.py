"""Standby replicas, with application instances as separate processes on the built-in broker.

Three instances share six stateful tasks with one standby replica each. Once every
standby has caught up with its changelog, one instance is killed with SIGKILL: each of
its tasks must move to the instance that held its standby and start from the standby's
stores, restoring nothing, and the counts must go on from where they were (exactly,
under exactly-once).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from rtprocs import Cluster, Instance, create_topics
from runtime_apps import COUNTS, INPUT
from test_app_processes import KEYS, _produce

from headrace.state import TaskCheckpoint

pytestmark = pytest.mark.slow
PARTITIONS = 6
STATUS = re.compile(r"\[status\] running tasks=(\S+)(?: standby=(\S+))? consumed")


def _last_status(inst: Instance) -> tuple[set[str], set[str]] | None:
    found = STATUS.findall(inst.log())
    if not found:
        return None
    tasks, standby = found[-1]
    return set(tasks.split(",")) - {"-"}, set(standby.split(",")) - {""}


def _settled(insts: list[Instance]) -> dict[str, tuple[set[str], set[str]]] | None:
    """Each instance's (tasks, standbys), once every task runs once and has a standby elsewhere."""
    views = {}
    for inst in insts:
        view = _last_status(inst)
        if view is None:
            return None
        views[inst.log_path.stem] = view
    active = [t for tasks, _ in views.values() for t in tasks]
    standby = [t for _, s in views.values() for t in s]
    every = {f"0_{p}" for p in range(PARTITIONS)}
    if sorted(active) != sorted(every) or sorted(standby) != sorted(every):
        return None
    if any(tasks & s for tasks, s in views.values()):
        return None
    return views


async def _wait(what: str, check: object, within: float = 60) -> object:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        found = check()  # type: ignore[operator]
        if found:
            return found
        await asyncio.sleep(0.25)
    raise AssertionError(f"{what} not reached within {within}s")


async def _changelog_ends(bootstrap: str, topic: str) -> dict[int, int]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await consumer.start()
    try:
        ends = await consumer.end_offsets([TopicPartition(topic, p) for p in range(PARTITIONS)])
    finally:
        await consumer.stop()
    return {tp.partition: o for tp, o in ends.items()}


async def _read_counts(
    bootstrap: str, topic: str, total: int, wait: float = 90
) -> list[tuple[bytes, int]]:
    """(key, count) of every committed output record, once every input shows up."""
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
    )
    await consumer.start()
    out: list[tuple[bytes, int]] = []
    seen: set[bytes] = set()
    deadline = time.monotonic() + wait
    try:
        while time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                for r in records:
                    value, count = r.value.split(b"|")
                    seen.add(value)
                    out.append((r.key, int(count)))
            if len(seen) >= total:
                return out
    finally:
        await consumer.stop()
    raise AssertionError(f"only {len(seen)} of {total} inputs in the output within {wait}s")


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
async def test_a_killed_instances_tasks_resume_on_their_standbys_without_restoring(
    cluster: Cluster, instances: list[Instance], tmp_path: Path, guarantee: str
) -> None:
    bootstrap = cluster.bootstrap
    app_id = {"at_least_once": "count_standby_alos", "exactly_once_v2": "count_standby_eos"}[
        guarantee
    ]
    topic_in, topic_out = f"{INPUT}-{app_id}", f"{COUNTS}-{app_id}"
    await create_topics(bootstrap, topic_in, topic_out, partitions=PARTITIONS)
    env = {"HEADRACE_NUM_STANDBY_REPLICAS": "1", "HEADRACE_PROCESSING_GUARANTEE": guarantee}
    insts = []
    for name in ("a", "b", "c"):
        inst = Instance(app_id, app_id, bootstrap, tmp_path / name, name, env=env).start()
        instances.append(inst)
        insts.append(inst)
    views = await _wait("a settled assignment", lambda: _settled(insts))
    assert isinstance(views, dict)

    await _produce(bootstrap, topic_in, 0, 3000)
    await _read_counts(bootstrap, topic_out, 3000)
    # Every standby has applied its changelog to the end (its checkpoint says so).
    changelog = f"{app_id}-counts-changelog"
    ends = await _changelog_ends(bootstrap, changelog)

    def caught_up() -> bool:
        for inst in insts:
            for task in views[inst.log_path.stem][1]:
                partition = int(task.split("_")[1])
                offsets = TaskCheckpoint(inst.state_dir / app_id / task).read_checkpoint()
                if offsets.get((changelog, partition)) != ends[partition]:
                    return False
        return True

    await _wait("standbys caught up", caught_up)
    victim, survivors = insts[0], insts[1:]
    moved = views["a"][0]
    assert moved  # a ran tasks that must move
    victim.kill()  # SIGKILL: no commit, no leave-group

    await _produce(bootstrap, topic_in, 3000, 1500)
    out = await _read_counts(bootstrap, topic_out, 4500)
    for task in moved:
        holder = next(s for s in survivors if task in views[s.log_path.stem][1])
        log = holder.log()
        assert f"task {task} taken over from its standby" in log, log[-3000:]
        assert f"task {task} restored 0 records" in log, log[-3000:]
    last: dict[bytes, int] = {}
    for key, count in out:
        last[key] = max(last.get(key, 0), count)
    per_key = Counter(KEYS[i % len(KEYS)].encode() for i in range(4500))
    if guarantee == "exactly_once_v2":
        assert last == per_key  # nothing counted twice, nothing lost
        assert Counter(k for k, _ in out) == per_key  # one committed output per input
    else:
        for key, n in per_key.items():
            assert last[key] >= n, (key, last[key], n)
    for inst in survivors:
        assert inst.stop() == 0

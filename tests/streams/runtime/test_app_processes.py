"""Application instances as separate processes sharing partitions through a consumer group.

Every test runs on the built-in broker; the first also runs, unchanged, on Tansu, a
Kafka-compatible broker nobody here wrote: nothing in the runtime depends on headrace's
own broker.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from httpq import http_address
from rtprocs import Cluster, Instance, create_topics, produce, read_until, until_committed
from runtime_apps import COUNTS, INPUT

from headrace.streams.runtime._checkpoints import CHECKPOINT_RECORDS

pytestmark = pytest.mark.slow
KEYS = [f"key-{i}" for i in range(12)]


async def _produce(bootstrap: str, topic: str, start: int, count: int) -> None:
    records = [
        (KEYS[i % len(KEYS)].encode(), f"v{i}".encode()) for i in range(start, start + count)
    ]
    await produce(bootstrap, topic, records, linger_ms=5)


async def _read_until(
    bootstrap: str, topic: str, done: Callable[[list[tuple[bytes, bytes]]], bool], wait: float = 60
) -> list[tuple[bytes, bytes]]:
    out = await read_until(bootstrap, topic, done, wait)
    assert done(out), f"only {len(out)} output records within {wait}s"
    return out


def _seen(out: list[tuple[bytes, bytes]]) -> set[str]:
    return {v.split(b"|")[0].decode() for _k, v in out}


def _every(n: int) -> Callable[[list[tuple[bytes, bytes]]], bool]:
    want = {f"v{i}" for i in range(n)}
    return lambda out: want <= _seen(out)


def _spawn(
    instances: list[Instance],
    cluster: Cluster,
    tmp_path: Path,
    target: str,
    name: str,
    state: str | None = None,
) -> Instance:
    inst = Instance(target, target, cluster.bootstrap, tmp_path / (state or name), name).start()
    instances.append(inst)
    return inst


def _max_counts(out: list[tuple[bytes, bytes]]) -> Counter[bytes]:
    best: Counter[bytes] = Counter()
    for k, v in out:
        best[k] = max(best[k], int(v.split(b"|")[1]))
    return best


@pytest.mark.parametrize("cluster", ["builtin", "tansu"], indirect=True)
async def test_instances_share_partitions_and_a_new_one_rebalances_without_loss(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    bootstrap = cluster.bootstrap
    topic_in, topic_out = f"{INPUT}-share", f"{COUNTS}-share"
    await create_topics(bootstrap, topic_in, topic_out, partitions=4)
    await _produce(bootstrap, topic_in, 0, 600)
    a = _spawn(instances, cluster, tmp_path, "count_share", "a")
    b = _spawn(instances, cluster, tmp_path, "count_share", "b")
    await asyncio.to_thread(a.wait_for, "consumed=", 40)
    await _produce(bootstrap, topic_in, 600, 600)
    c = _spawn(instances, cluster, tmp_path, "count_share", "c")
    await asyncio.to_thread(c.wait_for, "tasks=0_", 60)
    await _produce(bootstrap, topic_in, 1200, 600)
    out = await _read_until(bootstrap, topic_out, _every(1800))
    assert len(out) >= 1800
    # every instance ended up owning tasks at some point
    for inst in (a, b, c):
        assert "tasks=0_" in inst.log(), inst.log()[-2000:]
    counts = _max_counts(out)
    per_key = Counter(KEYS[i % len(KEYS)].encode() for i in range(1800))
    for key, n in per_key.items():
        assert counts[key] >= n  # state moved with its tasks: counts never restarted
    for inst in (a, b, c):
        assert inst.stop() == 0


async def _restore_metrics(address: str) -> dict[str, float]:
    """The restore families of an instance's /metrics, summed over tasks and stores."""
    import urllib.request

    from prometheus_client.parser import text_string_to_metric_families

    def scrape() -> str:
        with urllib.request.urlopen(f"http://{address}/metrics", timeout=10) as response:
            return str(response.read().decode())

    sums = {
        "headrace_streams_restored_records_total": 0.0,
        "headrace_streams_restore_remaining_records": 0.0,
    }
    for family in text_string_to_metric_families(await asyncio.to_thread(scrape)):
        for sample in family.samples:
            if sample.name in sums:
                sums[sample.name] += sample.value
    return sums


async def test_killed_instance_hands_its_tasks_over_and_state_is_restored_from_the_changelog(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    bootstrap = cluster.bootstrap
    topic_in, topic_out = f"{INPUT}-kill", f"{COUNTS}-kill"
    await create_topics(bootstrap, topic_in, topic_out, partitions=4)
    a = _spawn(instances, cluster, tmp_path, "count_kill", "a")
    b = _spawn(instances, cluster, tmp_path, "count_kill", "b")
    await asyncio.to_thread(a.wait_for, "tasks=0_", 40)
    await asyncio.to_thread(b.wait_for, "tasks=0_", 40)
    await _produce(bootstrap, topic_in, 0, 1200)
    await _read_until(bootstrap, topic_out, _every(1200))
    # Output is visible before its commit: kill b only once both members committed the
    # first 1,200, so b's changelog holds counts for a to restore (killed earlier, b's
    # uncommitted input would be replayed instead, with nothing to restore).
    await until_committed(bootstrap, "count_kill", topic_in, 1200)
    b.kill()  # SIGKILL: no commit, no checkpoint, no leave-group
    await _produce(bootstrap, topic_in, 1200, 1200)
    out = await _read_until(bootstrap, topic_out, _every(2400), wait=90)
    # a took b's tasks and rebuilt their stores from the changelog before processing
    assert "restored" in a.log() and "records; running" in a.log()
    restored = [
        line for line in a.log().splitlines() if "restored" in line and " 0 records" not in line
    ]
    assert restored, a.log()[-3000:]
    # ... and its metrics say so: records restored per store, none left to restore.
    metrics = await _restore_metrics(await http_address(a))
    assert metrics["headrace_streams_restored_records_total"] > 0, metrics
    assert metrics["headrace_streams_restore_remaining_records"] == 0, metrics
    counts = _max_counts(out)
    per_key = Counter(KEYS[i % len(KEYS)].encode() for i in range(2400))
    for key, n in per_key.items():
        assert counts[key] >= n, (key, counts[key], n)
    assert a.stop() == 0


async def test_restart_with_its_state_dir_restores_from_the_checkpoint_not_from_zero(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    bootstrap = cluster.bootstrap
    topic_in, topic_out = f"{INPUT}-restart", f"{COUNTS}-restart"
    await create_topics(bootstrap, topic_in, topic_out, partitions=4)
    first = _spawn(instances, cluster, tmp_path, "count_restart", "first", state="state")
    await asyncio.to_thread(first.wait_for, "tasks=0_", 40)
    await _produce(bootstrap, topic_in, 0, 600)
    await _read_until(bootstrap, topic_out, _every(600))
    assert first.stop() == 0
    assert "stopped cleanly" in first.log()
    checkpoints = list((tmp_path / "state").glob("count_restart/*/.checkpoint"))
    assert len(checkpoints) == 4
    second = _spawn(instances, cluster, tmp_path, "count_restart", "second", state="state")
    await asyncio.to_thread(second.wait_for, "tasks=0_", 40)
    await _produce(bootstrap, topic_in, 600, 600)
    out = await _read_until(bootstrap, topic_out, _every(1200))
    log = second.log()
    opened = [line for line in log.splitlines() if "opened; restoring" in line]
    assert len(opened) == 4 and not any("beginning" in line for line in opened), log[-3000:]
    assert log.count("restored 0 records") == 4  # the checkpoint was at the changelog's end
    counts = _max_counts(out)
    for key, n in Counter(KEYS[i % len(KEYS)].encode() for i in range(1200)).items():
        assert counts[key] >= n
    assert second.stop() == 0


async def test_sigkill_with_a_checkpoint_behind_the_stores_restores_its_tail_and_loses_nothing(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    """Checkpoints come every 10,000 changelog records, so at a SIGKILL the stores run
    ahead of the checkpoint on disk: a restart on the same state restores the changelog
    from that checkpoint over them, not from the beginning, and every count holds."""
    bootstrap = cluster.bootstrap
    topic_in, topic_out = f"{INPUT}-ckpt-kill", f"{COUNTS}-ckpt-kill"
    await create_topics(bootstrap, topic_in, topic_out, partitions=1)
    first = _spawn(instances, cluster, tmp_path, "count_checkpoint_kill", "first", state="state")
    await asyncio.to_thread(first.wait_for, "tasks=0_", 40)
    total = CHECKPOINT_RECORDS + 2_000
    await _produce(bootstrap, topic_in, 0, total)
    await until_committed(bootstrap, "count_checkpoint_kill", topic_in, total, wait=90)
    checkpoint = tmp_path / "state" / "count_checkpoint_kill" / "0_0" / ".checkpoint"
    deadline = time.monotonic() + 30
    while not checkpoint.is_file():
        assert time.monotonic() < deadline, first.log()[-3000:]
        await asyncio.sleep(0.2)
    # More records than the checkpoint covers, processed and committed, then the kill.
    await _produce(bootstrap, topic_in, total, 500)
    await until_committed(bootstrap, "count_checkpoint_kill", topic_in, total + 500, wait=60)
    first.kill()
    second = _spawn(instances, cluster, tmp_path, "count_checkpoint_kill", "second", state="state")
    await asyncio.to_thread(second.wait_for, "tasks=0_", 60)
    await _produce(bootstrap, topic_in, total + 500, 500)
    out = await _read_until(bootstrap, topic_out, _every(total + 1_000), wait=90)
    log = second.log()
    opened = [line for line in log.splitlines() if "opened; restoring" in line]
    assert opened and "beginning" not in opened[0] and "checkpoint" in opened[0], log[-3000:]
    restored = [line for line in log.splitlines() if "restored" in line and "records" in line]
    assert restored and "restored 0 records" not in restored[0], log[-3000:]
    counts = _max_counts(out)
    for key, n in Counter(KEYS[i % len(KEYS)].encode() for i in range(total + 1_000)).items():
        assert counts[key] >= n, (key, counts[key], n)
    assert second.stop() == 0

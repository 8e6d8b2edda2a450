"""examples/ apps run unchanged under ``headrace run`` against a broker (the built-in one)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer
from rtprocs import Cluster, Instance, create_topics, produce, until_committed

from headrace.examples import page_views, tire_pressure
from headrace.examples.iot_sensors import ALERTS, DEAD_LETTERS, ENRICHED, READINGS, SAMPLE

pytestmark = pytest.mark.slow


async def _collect(
    bootstrap: str, topics: list[str], want: int, wait: float = 40
) -> dict[str, list[tuple[bytes, bytes]]]:
    consumer = AIOKafkaConsumer(*topics, bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    got: dict[str, list[tuple[bytes, bytes]]] = {t: [] for t in topics}
    deadline = time.monotonic() + wait
    try:
        while time.monotonic() < deadline and sum(map(len, got.values())) < want:
            for tp, records in (await consumer.getmany(timeout_ms=500)).items():
                got[tp.topic].extend((r.key, r.value) for r in records)
    finally:
        await consumer.stop()
    return got


def _service(
    instances: list[Instance], target: str, app_id: str, bootstrap: str, tmp_path: Path
) -> Instance:
    inst = Instance(target, app_id, bootstrap, tmp_path / "state", app_id)
    instances.append(inst.start())
    return inst


async def test_iot_example_runs_as_a_service(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    bootstrap = cluster.bootstrap
    await create_topics(bootstrap, READINGS, ENRICHED, ALERTS, DEAD_LETTERS)
    inst = _service(
        instances, "headrace.examples.iot_sensors:build_topology", "iot", bootstrap, tmp_path
    )
    await asyncio.to_thread(inst.wait_for, "tasks=0_", 40)
    await produce(bootstrap, READINGS, [(key.encode(), value, None) for key, value in SAMPLE])
    got = await _collect(bootstrap, [ENRICHED, ALERTS, DEAD_LETTERS], want=5)
    assert sorted(k for k, _v in got[ENRICHED]) == [b"s-1", b"s-2", b"s-4"]
    assert [k for k, _v in got[ALERTS]] == [b"s-2"]
    assert [k for k, _v in got[DEAD_LETTERS]] == [b"s-1"]
    assert inst.stop() == 0


async def test_page_views_example_counts_views_per_page_and_minute_as_a_service(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    """Views are re-keyed through the app's repartition topic, counted in windowed
    RocksDB stores with changelogs, and each minute's final count comes out once the
    minute and its grace have passed."""
    bootstrap = cluster.bootstrap
    await create_topics(bootstrap, page_views.VIEWS, page_views.PER_MINUTE)
    inst = _service(
        instances, "headrace.examples.page_views:build_topology", "page-views", bootstrap, tmp_path
    )
    await asyncio.to_thread(inst.wait_for, "tasks=0_", 40)
    t0 = page_views.T0
    views = [
        ("alice", "/home", 1_000),
        ("bob", "/home", 20_000),
        ("alice", "/cart", 45_000),
        ("carol", "/home", 50_000),
        ("dave", "/home", 61_000),
    ]
    # minute 3 for both pages: closes minutes 0 and 1 (10 s grace) in every task
    closers = [("erin", "/home", 185_000), ("frank", "/cart", 185_000)]

    def records(rows: list[tuple[str, str, int]]) -> list[tuple[bytes, bytes, int | None]]:
        return [
            (user.encode(), json.dumps({"page": page, "user": user}).encode(), t0 + at)
            for user, page, at in rows
        ]

    # Views keyed by user sit on different input partitions, so nothing orders a closer
    # before an earlier view on its way to the page's task: send the closers only once
    # the counting task has taken in every view (else a view may rightly count as late).
    await produce(bootstrap, page_views.VIEWS, records(views))
    await until_committed(
        bootstrap, "page-views", "page-views-views-by-page-repartition", len(views)
    )
    await produce(bootstrap, page_views.VIEWS, records(closers))
    got = await _collect(bootstrap, [page_views.PER_MINUTE], want=3)
    reports = sorted(
        (k.decode(), json.loads(v)["minute"], json.loads(v)["views"])
        for k, v in got[page_views.PER_MINUTE]
    )
    assert reports == [("/cart", "22:14", 1), ("/home", "22:14", 3), ("/home", "22:15", 1)]
    assert inst.stop() == 0
    log = inst.log()
    assert "stopped cleanly" in log
    # Both windowed stores were checkpointed against their changelogs on the way out.
    assert list((tmp_path / "state" / "page-views").glob("*/.checkpoint")), log[-2000:]


async def test_tire_pressure_example_alerts_once_per_incident_as_a_service(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    bootstrap = cluster.bootstrap
    await create_topics(bootstrap, tire_pressure.READINGS, tire_pressure.ALERTS)
    inst = _service(
        instances, "headrace.examples.tire_pressure:build_topology", "tires", bootstrap, tmp_path
    )
    await asyncio.to_thread(inst.wait_for, "tasks=0_", 40)
    await produce(
        bootstrap,
        tire_pressure.READINGS,
        [(r.key.encode(), json.dumps(r.value).encode(), None) for r in tire_pressure.SAMPLE],
    )
    got = await _collect(bootstrap, [tire_pressure.ALERTS], want=2)
    alerts = sorted((k.decode(), json.loads(v)["status"]) for k, v in got[tire_pressure.ALERTS])
    assert alerts == [("truck-7/front-left", "slow-leak"), ("truck-7/rear-right", "blowout")]
    assert inst.stop() == 0

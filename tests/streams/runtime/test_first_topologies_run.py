"""The three first topologies of ``tests/first_topologies.py`` under ``headrace run``
against the built-in broker: fed and read with a real Kafka client (aiokafka), each
sink holds exactly the expected value per key. No serde is given on any internal step;
the region counts run as an App object whose default serdes its sink uses."""

from __future__ import annotations

import asyncio
import json
import struct
import time
from pathlib import Path
from typing import Any

import first_topologies as ft
import pytest
from aiokafka import AIOKafkaConsumer
from rtprocs import ROOT, Cluster, Instance, create_topics, produce

pytestmark = pytest.mark.slow
MODULE = ROOT / "tests" / "first_topologies.py"


async def _latest(
    bootstrap: str, topic: str, want: dict[str, int], wait: float = 60
) -> dict[str, int]:
    """The last value per key of ``topic`` (UTF-8 keys, 8-byte longs), read until it is
    ``want`` or ``wait`` runs out, then a little longer: a later record would change it."""
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    latest: dict[str, int] = {}

    async def poll(timeout_ms: int) -> None:
        for records in (await consumer.getmany(timeout_ms=timeout_ms)).values():
            for r in records:
                latest[r.key.decode()] = struct.unpack(">q", r.value)[0]

    try:
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and latest != want:
            await poll(500)
        await poll(1500)
    finally:
        await consumer.stop()
    return latest


async def _run(
    cluster: Cluster,
    instances: list[Instance],
    tmp_path: Path,
    target: str,
    app_id: str,
    topics: list[str],
    source: str,
    records: list[tuple[bytes | None, bytes | None]],
    sink: str,
    want: dict[str, int],
) -> None:
    await create_topics(cluster.bootstrap, *topics)
    inst = Instance(f"{MODULE}:{target}", app_id, cluster.bootstrap, tmp_path / "state", app_id)
    instances.append(inst.start())
    await asyncio.to_thread(inst.wait_for, "tasks=", 60)
    await produce(cluster.bootstrap, source, records)
    assert await _latest(cluster.bootstrap, sink, want) == want, inst.log()[-3000:]
    assert inst.stop() == 0, inst.log()[-3000:]


def _utf8(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


def _json(value: Any) -> bytes:
    return json.dumps(value).encode()


async def test_word_count_runs_as_a_service(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    await _run(
        cluster,
        instances,
        tmp_path,
        "word_count",
        "first-words",
        [ft.LINES, ft.WORD_COUNTS],
        ft.LINES,
        [(None, _utf8(line)) for line in ft.LINES_IN],
        ft.WORD_COUNTS,
        ft.WORD_COUNTS_OUT,
    )


async def test_table_regrouping_runs_as_an_app_with_default_serdes(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    await _run(
        cluster,
        instances,
        tmp_path,
        "region_counts_app",
        "first-regions",
        [ft.USERS, ft.REGION_COUNTS],
        ft.USERS,
        [(_utf8(user), _utf8(region)) for user, region in ft.USERS_IN],
        ft.REGION_COUNTS,
        ft.REGION_COUNTS_OUT,
    )


async def test_aggregate_summing_ints_runs_as_a_service(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    await _run(
        cluster,
        instances,
        tmp_path,
        "payment_totals",
        "first-totals",
        [ft.PAYMENTS, ft.TOTALS],
        ft.PAYMENTS,
        [(_utf8(pid), _json(p)) for pid, p in ft.PAYMENTS_IN],
        ft.TOTALS,
        ft.TOTALS_OUT,
    )


async def test_a_sink_without_serde_or_default_stops_the_app_at_start(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    """``region_counts`` run bare (not as its App): no default serdes, so the App stops
    at start naming the sink and its topic, before reading anything."""
    await create_topics(cluster.bootstrap, ft.USERS, ft.REGION_COUNTS)
    inst = Instance(
        f"{MODULE}:region_counts", "first-bare", cluster.bootstrap, tmp_path / "state", "bare"
    )
    instances.append(inst.start())
    assert inst.proc is not None
    code = await asyncio.to_thread(inst.proc.wait, 60)
    log = inst.log()
    assert code != 0, log[-2000:]
    assert f"(topic '{ft.REGION_COUNTS}') has no key serde" in log, log[-2000:]
    assert "KSTREAM-SINK-" in log and "consumed=" not in log, log[-2000:]

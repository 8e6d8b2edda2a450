"""An App's /metrics follow what operators watch over time: the consumer lag of each
source partition is what is left to process while the App is behind, and falls to
zero once it has caught up; wall-clock punctuations are timed."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from headrace import App
from headrace.streams import Processor, PunctuationType, Record, Topology

RECORDS, PARTITIONS = 300, 2


class Slow(Processor):
    """Takes its time over each record and punctuates on the wall clock."""

    def init(self, context: Any) -> None:
        super().init(context)
        context.schedule(50, PunctuationType.WALL_CLOCK_TIME, self.punctuate)

    def punctuate(self, now: int) -> None:
        self.context.forward(Record(b"tick", str(now).encode(), now))

    def process(self, record: Record) -> None:
        time.sleep(0.004)
        self.context.forward(record)


def _samples(app: App, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    out = {}
    for family in text_string_to_metric_families(app.metrics.exposition().decode()):
        for sample in family.samples:
            if sample.name == name:
                out[tuple(sorted(sample.labels.items()))] = sample.value
    return out


async def test_lag_falls_as_the_app_catches_up_and_punctuations_are_timed(
    broker: Any, tmp_path: Path
) -> None:
    bootstrap = broker.bootstrap_servers
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    await admin.create_topics([NewTopic("slow-in", PARTITIONS, 1), NewTopic("slow-out", 1, 1)])
    await admin.close()
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    for i in range(RECORDS):
        await producer.send("slow-in", b"v", key=str(i).encode(), partition=i % PARTITIONS)
    await producer.flush()
    await producer.stop()
    topology = (
        Topology()
        .add_source("src", "slow-in")
        .add_processor("slow", Slow, "src")
        .add_sink("out", "slow-out", "slow")
    )
    app = App(
        "lagging",
        topology,
        bootstrap_servers=bootstrap,
        state_dir=str(tmp_path / "state"),
        commit_interval_ms=100,
        max_poll_records=20,
    )
    await app.start()
    try:
        lags: list[float] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            lag = _samples(app, "headrace_streams_consumer_lag")
            if len(lag) == PARTITIONS:
                lags.append(sum(lag.values()))
                if lags[-1] == 0 and app.status()["consumed"] >= RECORDS:
                    break
            await asyncio.sleep(0.05)
        assert lags and lags[-1] == 0, lags
        assert max(lags) > 0 and lags == sorted(lags, reverse=True), lags  # only ever falls
        timed = _samples(app, "headrace_streams_punctuation_latency_seconds_count")
        assert sum(timed.values()) >= 1, timed
    finally:
        await app.stop()

"""librdkafka (confluent-kafka), unchanged, reads a compacted topic after the broker's
own cleaner ran: one value per key, each at the offset it was produced at."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from brokerproc import BrokerProcess
from kafka_clients import Confluent, Got, unique

KEYS = 12
SEGMENT_BYTES = 2048


@pytest.fixture(scope="module")
def cleaning_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    data = tmp_path_factory.mktemp("compaction") / "data"
    with BrokerProcess(data, "--log-cleaner-backoff-ms", "200") as broker:
        yield broker


def _compacted_topic(broker: BrokerProcess) -> str:
    topic = unique("compacted")
    Confluent().create_topic(
        broker.bootstrap,
        topic,
        1,
        {
            "cleanup.policy": "compact",
            "segment.bytes": str(SEGMENT_BYTES),
            "min.cleanable.dirty.ratio": "0.01",
            "delete.retention.ms": "3600000",
        },
    )
    return topic


@pytest.mark.parametrize(
    "codec",
    [None, *(pytest.param(c, marks=pytest.mark.slow) for c in ("gzip", "snappy", "lz4", "zstd"))],
)
def test_a_real_consumer_sees_one_value_per_key_at_its_original_offset(
    cleaning_broker: BrokerProcess, codec: str | None
) -> None:
    client, bs = Confluent(), cleaning_broker.bootstrap
    topic = _compacted_topic(cleaning_broker)
    produced: dict[int, tuple[bytes | None, bytes | None]] = {}
    for round_ in range(8):
        pairs: list[tuple[bytes | None, bytes | None]] = [
            (f"key-{i}".encode(), f"round {round_} of key {i} ".encode() * 4) for i in range(KEYS)
        ]
        if round_ == 7:
            pairs[0] = (b"key-0", None)  # the last word on key-0 is a deletion
        for (_, offset), pair in zip(client.produce(bs, topic, pairs, codec), pairs, strict=True):
            produced[offset] = pair
    # Incompressible filler, so that every keyed record above sits in a closed
    # (cleanable) segment whatever the codec.
    filler = [(b"filler", os.urandom(200)) for _ in range(3 * SEGMENT_BYTES // 200)]
    for (_, offset), pair in zip(client.produce(bs, topic, filler, codec), filler, strict=True):
        produced[offset] = pair
    latest = {key: offset for offset, (key, _) in sorted(produced.items()) if key != b"filler"}

    got: list[Got] = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        got = client.consume(bs, topic, 1, len(produced), timeout=2)
        keyed = [g for g in got if g.key != b"filler"]
        if len(keyed) == KEYS:
            break
        time.sleep(0.3)
    keyed = [g for g in got if g.key != b"filler"]
    assert sorted((g.key, g.offset) for g in keyed) == sorted(latest.items()), (
        f"not compacted: {len(keyed)} keyed records\n{cleaning_broker.log()}"
    )
    for g in got:
        assert produced[g.offset] == (g.key, g.value)  # same record, same offset
    assert [g.offset for g in got] == sorted(g.offset for g in got)
    assert next(g for g in keyed if g.key == b"key-0").value is None  # tombstone kept
    assert len(got) < len(produced) // 2


def test_a_real_producer_is_refused_a_keyless_record(cleaning_broker: BrokerProcess) -> None:
    client, bs = Confluent(), cleaning_broker.bootstrap
    topic = _compacted_topic(cleaning_broker)
    with pytest.raises(RuntimeError, match=r"(?i)invalid.?record"):
        client.produce(bs, topic, [(None, b"no key")])
    assert client.produce(bs, topic, [(b"k", b"keyed")]) == [(0, 0)]


def test_the_broker_cli_takes_the_cleaner_backoff(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path / "data", "--log-cleaner-backoff-ms", "123") as broker:
        from confluent_kafka.admin import AdminClient, ConfigResource

        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        resource = ConfigResource(ConfigResource.Type.BROKER, "1")
        configs = admin.describe_configs([resource])[resource].result(10)
        assert configs["log.cleaner.backoff.ms"].value == "123"

"""aiokafka, kafka-python and confluent-kafka, unchanged, against the built-in broker."""

from __future__ import annotations

from typing import Any

import pytest
from brokerproc import BrokerProcess
from kafka_clients import ALL_CLIENTS, Got, present, unique

pytestmark = pytest.mark.conformance

N = 600
PARTITIONS = 3


@pytest.fixture(params=ALL_CLIENTS, ids=lambda c: c.name)
def client(request: pytest.FixtureRequest) -> Any:
    return request.param()


def _pairs(n: int) -> list[tuple[bytes, bytes]]:
    return [(f"k{i % 50}".encode(), f"v{i}".encode()) for i in range(n)]


def _check_roundtrip(got: list[Got], n: int) -> None:
    assert sorted(int(present(g.value)[1:]) for g in got) == list(range(n))
    partitions_of_key: dict[bytes | None, set[int]] = {}
    for g in got:
        partitions_of_key.setdefault(g.key, set()).add(g.partition)
    assert all(len(p) == 1 for p in partitions_of_key.values()), "a key landed on 2 partitions"
    assert {g.partition for g in got} == set(range(PARTITIONS))
    last: dict[bytes | None, int] = {}
    for g in sorted(got, key=lambda g: (g.partition, g.offset)):
        i = int(present(g.value)[1:])
        assert last.get(g.key, -1) < i, "per-key order broken"
        last[g.key] = i
    offsets = [(g.partition, g.offset) for g in got]
    assert len(set(offsets)) == len(offsets), "an offset holds two records"


@pytest.mark.parametrize("compression", [None, "gzip", "snappy", "lz4", "zstd"])
def test_keyed_roundtrip_over_partitions(
    broker_process: BrokerProcess, client: Any, compression: str | None
) -> None:
    bs = broker_process.bootstrap
    topic = unique("rt")
    client.create_topic(bs, topic, PARTITIONS)
    acked = client.produce(bs, topic, _pairs(N), compression)
    assert len(acked) == N
    got = client.consume(bs, topic, PARTITIONS, N)
    _check_roundtrip(got, N)
    assert sorted((g.partition, g.offset) for g in got) == sorted(acked)


def test_list_offsets_by_timestamp(broker_process: BrokerProcess, client: Any) -> None:
    bs = broker_process.bootstrap
    topic = unique("ts")
    client.create_topic(bs, topic, 1)
    base = 1_700_000_000_000
    stamps = [base + i * 1000 for i in range(100)]
    client.produce(bs, topic, [(None, f"v{i}".encode()) for i in range(100)], timestamps=stamps)
    found = client.offsets_for_times(bs, topic, 1, base + 42_500)
    assert found == {0: 43}
    assert client.offsets_for_times(bs, topic, 1, base) == {0: 0}
    assert client.offsets_for_times(bs, topic, 1, base + 10**9) == {0: None}

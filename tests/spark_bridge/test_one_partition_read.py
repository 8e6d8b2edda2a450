"""A read of one topic-partition labels every record with that partition.

Spark's plan gives each task one range of one partition, and such a read takes its
partition column from the range rather than asking each record (``_kafka.py``). These
reads check that label against where the producer placed each record, on a client that
has just read other partitions of the same topic (and left their fetched records
behind), through chunk ends, and to the log's end.
"""

from __future__ import annotations

from typing import Any

import pytest
from brokerproc import BrokerProcess
from kafka_clients import Confluent, unique

from headrace.spark_bridge import OffsetRange
from headrace.spark_bridge._arrow import record_schema, to_record_batch
from headrace.spark_bridge._kafka import ConfluentClient

RECORDS = 600


@pytest.fixture(scope="module")
def bootstrap(broker_process: BrokerProcess) -> str:
    return broker_process.bootstrap


@pytest.fixture(scope="module")
def placed(bootstrap: str) -> tuple[str, dict[bytes, tuple[int, int]]]:
    """A 3-partition topic and, per value, the (partition, offset) it was written to."""
    from confluent_kafka import Producer

    topic = unique("one-partition")
    Confluent().create_topic(bootstrap, topic, 3)
    where: dict[bytes, tuple[int, int]] = {}

    def delivered(err: object, msg: Any) -> None:
        assert err is None, err
        where[msg.value()] = (msg.partition(), msg.offset())

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(RECORDS):  # keyed, so the records spread over the three partitions
        producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i, on_delivery=delivered)
        producer.poll(0)
    assert producer.flush(60) == 0
    assert len(where) == RECORDS
    return topic, where


def read_rows(client: ConfluentClient, ranges: list[OffsetRange]) -> list[tuple[int, int, bytes]]:
    """(partition, offset, value) of each record read, through the Arrow batch Spark gets."""
    rows: list[tuple[int, int, bytes]] = []
    for cols in client.read(ranges, chunk=7):
        batch = to_record_batch(cols, record_schema(False)).to_pydict()
        rows += zip(batch["partition"], batch["offset"], batch["value"], strict=True)
    return rows


def test_one_partition_read_after_a_read_of_others(
    bootstrap: str, placed: tuple[str, dict[bytes, tuple[int, int]]]
) -> None:
    topic, where = placed
    latest = {p: 1 + max(o for q, o in where.values() if q == p) for p in range(3)}
    with ConfluentClient(bootstrap) as client:
        # Two partitions together, each stopped mid-log: their later records may be
        # fetched and queued when the next read starts.
        both = read_rows(client, [OffsetRange(topic, 0, 5, 25), OffsetRange(topic, 2, 0, 7)])
        assert sorted((p, o) for p, o, _ in both) == [(0, o) for o in range(5, 25)] + [
            (2, o) for o in range(7)
        ]
        for ranges in (
            [OffsetRange(topic, 1, 3, 40)],  # mid-log
            [OffsetRange(topic, 2, 0, 7)],  # a partition the last read also had
            [OffsetRange(topic, 1, 0, latest[1])],  # to the end of the log
        ):
            (r,) = ranges
            rows = read_rows(client, ranges)
            assert [(p, o) for p, o, _ in rows] == [(r.partition, o) for o in range(r.start, r.end)]
            # Each record's label is where the producer's acknowledgement put it.
            assert all(where[v] == (p, o) for p, o, v in rows)

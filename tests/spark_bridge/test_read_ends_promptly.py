"""A read ends as soon as its range's last record is in.

librdkafka's batch consume returns early only once it holds as many messages as it was
asked for; a read that asked for a full batch at its tail waited out the call's whole
timeout (0.5 s) after the last record arrived, in every Spark task: on 32 partitions that
wait was most of the read. These reads are short, so the wait, not the records, would
dominate their time.
"""

from __future__ import annotations

import time

import pytest
from brokerproc import BrokerProcess
from kafka_clients import Confluent, unique

from headrace.spark_bridge import OffsetRange
from headrace.spark_bridge._kafka import ConfluentClient

READS = 10
OLD_TAIL_WAIT = 0.5  # what each of these reads waited at its tail before the fix


@pytest.fixture(scope="module")
def bootstrap(broker_process: BrokerProcess) -> str:
    return broker_process.bootstrap


def topic_with(bootstrap: str, records: int) -> str:
    topic = unique("tail")
    client = Confluent()
    client.create_topic(bootstrap, topic, 1)
    client.produce(bootstrap, topic, [(None, b"v%d" % i) for i in range(records)])
    return topic


def timed_reads(client: ConfluentClient, ranges: list[OffsetRange]) -> tuple[float, list[int]]:
    began = time.perf_counter()
    offsets = []
    for _ in range(READS):
        offsets = [o for cols in client.read(ranges) for o in cols.offsets]
    return time.perf_counter() - began, offsets


@pytest.mark.parametrize(
    "start, end",
    [(0, 50), (10, 30)],  # to the log's end (end-of-partition follows), and within it
)
def test_a_range_read_returns_once_its_last_record_is_in(
    bootstrap: str, start: int, end: int
) -> None:
    topic = topic_with(bootstrap, 50)
    with ConfluentClient(bootstrap) as client:
        timed_reads(client, [OffsetRange(topic, 0, start, end)])  # connect before the clock
        seconds, offsets = timed_reads(client, [OffsetRange(topic, 0, start, end)])
    assert offsets == list(range(start, end))
    # Before: at least READS * OLD_TAIL_WAIT (5 s) whatever the load; now a few fetch
    # round trips a read. Half the old floor leaves room for a busy machine.
    assert seconds < READS * OLD_TAIL_WAIT / 2, f"{READS} reads took {seconds:.2f} s"

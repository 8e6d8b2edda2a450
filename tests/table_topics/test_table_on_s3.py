"""A table topic whose broker keeps its tables on S3 (``headrace broker --table-location
s3://lake/...``), on a real S3 server (S3Proxy, tests/s3_server.py).

The broker gets the server the way a user's shell would give it: the usual ``AWS_*``
variables in its environment. What must hold: every record of a ``key_value`` topic
becomes one row with its key, value, partition, offset, timestamp and headers, in a
Delta table whose objects are in the bucket; records produced later are added once.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

import deltalake
import pytest
from brokerproc import BrokerProcess
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from s3_server import S3Server

pytestmark = pytest.mark.slow  # a broker and S3Proxy's JVM


@pytest.fixture(scope="module")
def location(s3_server: S3Server) -> str:
    return s3_server.table_url(f"lake-{uuid4().hex[:8]}")


@pytest.fixture(scope="module")
def broker(
    tmp_path_factory: pytest.TempPathFactory, s3_server: S3Server, location: str
) -> Iterator[BrokerProcess]:
    # the broker subprocess inherits this environment: the server's address and keys
    with pytest.MonkeyPatch.context() as env:
        for name, value in s3_server.env().items():
            env.setenv(name, value)
        data = tmp_path_factory.mktemp("s3-writer") / "data"
        with BrokerProcess(data, "--table-location", location) as proc:
            yield proc


def records(n: int, partitions: int, first: int = 0) -> list[dict[str, Any]]:
    base_ms = int(time.time() * 1000) - 60_000
    return [
        {
            "key": None if i % 7 == 3 else f"key-{i}".encode(),
            "value": b"" if i % 11 == 5 else f"value-{i}".encode() * (1 + i % 3),
            "partition": i % partitions,
            "headers": [] if i % 5 == 0 else [("trace", f"t{i}".encode()), ("n", bytes([i % 256]))],
            "timestamp": base_ms + i,
        }
        for i in range(first, first + n)
    ]


def produce(bootstrap: str, topic: str, batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each record as the table should hold it, with the offset the broker gave it."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    rows: list[dict[str, Any]] = []

    def acked(record: dict[str, Any]) -> Any:
        def report(error: Any, message: Any) -> None:
            assert error is None, error
            rows.append(
                {
                    "key": record["key"],
                    "partition": record["partition"],
                    "offset": message.offset(),
                    "timestamp": datetime.fromtimestamp(record["timestamp"] / 1000, UTC),
                    "headers": [{"key": k, "value": v} for k, v in record["headers"]],
                    "value": record["value"],
                }
            )

        return report

    for record in batch:
        producer.produce(
            topic,
            key=record["key"],
            value=record["value"],
            partition=record["partition"],
            headers=record["headers"],
            timestamp=record["timestamp"],
            on_delivery=acked(record),
        )
    assert producer.flush(30) == 0
    return rows


def rows_when(s3: S3Server, url: str, count: int, timeout: float = 60.0) -> list[dict[str, Any]]:
    """The table's rows once it holds ``count`` (a few more fail at once, as doubles)."""
    deadline = time.monotonic() + timeout
    seen: int | None = None
    while True:
        try:
            table = deltalake.DeltaTable(url, storage_options=s3.storage_options())
            rows = table.to_pyarrow_table().to_pylist()
            seen = len(rows)
            if seen >= count:
                return sorted(rows, key=lambda row: (row["partition"], row["offset"]))
        except deltalake.exceptions.TableNotFoundError:
            pass
        assert time.monotonic() < deadline, f"{url}: {seen} rows after {timeout}s, not {count}"
        time.sleep(0.2)


def by_position(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda row: (row["partition"], row["offset"]))


def test_key_value_table_on_s3_holds_every_record_once(
    broker: BrokerProcess, s3_server: S3Server, location: str
) -> None:
    topic = f"orders-{os.getpid()}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    config = {"headrace.table.mode": "key_value", "headrace.table.commit.interval.ms": "500"}
    admin.create_topics([NewTopic(topic, 3, config=config)])[topic].result(15)
    url = f"{location}/{topic}"

    first = produce(broker.bootstrap, topic, records(600, 3))
    table = rows_when(s3_server, url, 600)
    assert list(table[0]) == ["key", "partition", "offset", "timestamp", "headers", "value"]
    assert table == by_position(first)
    # the table is on the server: its log is objects in the bucket's folder
    log = s3_server.blobs / url.removeprefix("s3://") / "_delta_log"
    assert sorted(log.glob("*.json")), f"no commits under {log}"

    later = produce(broker.bootstrap, topic, records(150, 3, first=600))
    assert rows_when(s3_server, url, 750) == by_position(first + later)
    time.sleep(1.5)  # three commit intervals more: nothing may arrive twice
    assert len(rows_when(s3_server, url, 750)) == 750

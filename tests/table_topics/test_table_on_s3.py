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
from typing import Any
from uuid import uuid4

import pytest
from brokerproc import BrokerProcess
from s3_server import S3Server
from table_topic_io import as_row, by_position, create_topic, produce, table_config, table_rows

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


def rows_when(s3: S3Server, url: str, count: int) -> list[dict[str, Any]]:
    """The table's rows once it holds ``count`` (a few more fail at once, as doubles)."""
    return by_position(table_rows(url, count, storage_options=s3.storage_options()).to_pylist())


def test_key_value_table_on_s3_holds_every_record_once(
    broker: BrokerProcess, s3_server: S3Server, location: str
) -> None:
    topic = f"orders-{os.getpid()}"
    create_topic(broker.bootstrap, topic, 3, table_config("key_value", 500))
    url = f"{location}/{topic}"

    first = [as_row(r) for r in produce(broker.bootstrap, topic, records(600, 3))]
    table = rows_when(s3_server, url, 600)
    assert list(table[0]) == ["key", "partition", "offset", "timestamp", "headers", "value"]
    assert table == by_position(first)
    # the table is on the server: its log is objects in the bucket's folder
    log = s3_server.blobs / url.removeprefix("s3://") / "_delta_log"
    assert sorted(log.glob("*.json")), f"no commits under {log}"

    later = [as_row(r) for r in produce(broker.bootstrap, topic, records(150, 3, first=600))]
    assert rows_when(s3_server, url, 750) == by_position(first + later)
    time.sleep(1.5)  # three commit intervals more: nothing may arrive twice
    assert len(rows_when(s3_server, url, 750)) == 750

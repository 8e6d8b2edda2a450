"""What the table-topic tests do to a topic and read back from its table: create it with its
``headrace.table.*`` settings, produce records and learn the offsets the broker gave them,
say which rows the table must then hold, and wait until it holds them.

A record here is a dict with ``key``, ``value`` and ``partition``, and optionally
``headers`` (``(name, bytes)`` pairs) and ``timestamp`` (epoch ms); produced, it gains the
``offset`` the broker acknowledged.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

Record = dict[str, Any]


def table_config(
    mode: str, commit_interval_ms: int, partition_by: str | None = None
) -> dict[str, str]:
    """A table topic's settings as the topic configs that carry them."""
    config = {
        "headrace.table.mode": mode,
        "headrace.table.commit.interval.ms": str(commit_interval_ms),
    }
    if partition_by is not None:
        config["headrace.table.partition.by"] = partition_by
    return config


def create_topic(
    bootstrap: str, topic: str, partitions: int, config: Mapping[str, str] | None = None
) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, config=dict(config or {}))])[topic].result(15)


def sample(n: int, partitions: int, base_ms: int, step_ms: int = 1) -> list[Record]:
    """``n`` records, round-robin over the partitions, ``step_ms`` apart from ``base_ms``:
    null keys, empty values, records without headers and a repeated header name among
    them."""
    return [
        {
            "key": None if i % 7 == 3 else f"key-{i}".encode(),
            "value": b"" if i % 11 == 5 else f"value-{i}".encode() * (1 + i % 3),
            "partition": i % partitions,
            "headers": [] if i % 5 == 0 else [("a", b"1"), ("b", bytes([i % 256])), ("a", b"2")],
            "timestamp": base_ms + i * step_ms,
        }
        for i in range(n)
    ]


def produce(bootstrap: str, topic: str, records: Iterable[Record]) -> list[Record]:
    """Produce ``records`` idempotently, in order; each comes back, in the order they were
    acknowledged, with the offset the broker gave it."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    acked: list[Record] = []

    def delivered(record: Record) -> Any:
        def report(error: Any, message: Any) -> None:
            assert error is None, error
            acked.append({**record, "offset": message.offset()})

        return report

    for record in records:
        producer.produce(
            topic,
            key=record["key"],
            value=record["value"],
            partition=record["partition"],
            headers=record.get("headers", []),
            timestamp=record.get("timestamp", 0),  # 0: the producer's clock
            on_delivery=delivered(record),
        )
    assert producer.flush(30) == 0
    return acked


def as_row(record: Record) -> dict[str, Any]:
    """A produced record as a ``key_value`` table holds it, read by delta-rs."""
    return {
        "key": record["key"],
        "partition": record["partition"],
        "offset": record["offset"],
        "timestamp": datetime.fromtimestamp(record["timestamp"] / 1000, UTC),
        "headers": [{"key": k, "value": v} for k, v in record["headers"]],
        "value": record["value"],
    }


def by_position(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda row: (row["partition"], row["offset"]))


def wait_for_table(
    location: Path | str,
    done: Callable[[pa.Table], bool],
    timeout: float = 60.0,
    storage_options: dict[str, str] | None = None,
) -> pa.Table:
    """The table at ``location`` (a folder or a URL) once ``done`` says so; the failure
    tells what was there last."""
    table, met = table_when(location, done, timeout, storage_options=storage_options)
    assert met and table is not None, f"{location} after {timeout}s: {_seen(table)}"
    return table


def table_when(
    location: Path | str,
    done: Callable[[pa.Table], bool],
    timeout: float,
    columns: list[str] | None = None,
    storage_options: dict[str, str] | None = None,
) -> tuple[pa.Table | None, bool]:
    """The table at ``location`` (only ``columns``, if given) once ``done`` says so, and
    True; or, once ``timeout`` has passed, what was there last (None: no table) and
    False. For callers that report a wait that ran out rather than fail on it."""
    deadline = time.monotonic() + timeout
    while True:
        table = read_table(location, columns, storage_options)
        if table is not None and done(table):
            return table, True
        if time.monotonic() >= deadline:
            return table, False
        time.sleep(0.1)


def read_table(
    location: Path | str,
    columns: list[str] | None = None,
    storage_options: dict[str, str] | None = None,
) -> pa.Table | None:
    """The table at ``location`` as it is now (only ``columns``, if given), or None if
    there is no table there yet."""
    try:
        table = deltalake.DeltaTable(str(location), storage_options=storage_options)
    except deltalake.exceptions.TableNotFoundError:
        return None
    return table.to_pyarrow_table(columns=columns)


def table_rows(
    location: Path | str,
    at_least: int,
    timeout: float = 60.0,
    storage_options: dict[str, str] | None = None,
) -> pa.Table:
    """The table once it holds ``at_least`` rows (a few more return too, so that a test
    comparing them finds the doubles)."""
    return wait_for_table(location, lambda t: t.num_rows >= at_least, timeout, storage_options)


def _seen(table: pa.Table | None) -> str:
    if table is None:
        return "no table"
    return f"{table.num_rows} rows, the first {table.slice(0, 10).to_pylist()}"

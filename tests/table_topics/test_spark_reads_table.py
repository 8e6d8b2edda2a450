"""Spark reads table topics' tables: the tables the broker's writer keeps, read with
``format("delta")`` (delta-spark) and with ``read_delta`` (delta-rs's snapshot, Spark's
Parquet reader), hold the same rows as delta-rs reads directly, and those are the
records produced:

- a ``key_value`` topic's appended table: every record with its key, value, partition,
  offset, timestamp and headers (null keys, empty values and repeated header names
  among them);
- a compacted ``key_value`` topic's upsert table, written by MERGE: the latest record
  of each key, and no row for a key whose latest record is a tombstone.

delta-spark 4.4 runs only on pyspark 4.2, so Spark runs in a subprocess of
.venv-delta-spark (as in tests/spark_bridge/test_delta_spark_export.py), one session for
both tables; without that virtualenv or jvm/delta's jars the test fails, saying how to
get them.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pytest
from brokerproc import BrokerProcess
from table_topic_io import (
    Record,
    by_position,
    create_topic,
    produce,
    sample,
    table_config,
    wait_for_table,
)

from jvm import lib_dir

pytestmark = pytest.mark.slow(seconds=65)  # a broker and a Spark session

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv-delta-spark"
JOB = Path(__file__).with_name("spark_reads_table_job.py")
SPARK_TIMEOUT = 420.0  # Spark starts in 10-60 s on a loaded machine
N = 900
KEYS = 60

Row = dict[str, Any]


def as_hex_row(record: Record) -> Row:
    """A produced record as the reads show it: binary in upper-case hex, time in epoch ms."""
    return {
        "key": None if record["key"] is None else record["key"].hex().upper(),
        "partition": record["partition"],
        "offset": record["offset"],
        "timestamp_ms": record["timestamp"],
        "headers": [{"key": k, "value": v.hex().upper()} for k, v in record["headers"]],
        "value": None if record["value"] is None else record["value"].hex().upper(),
    }


def produce_rows(bootstrap: str, topic: str, records: list[Record]) -> list[Row]:
    """Each record as a row, with the offset the broker gave it, in table order."""
    return by_position(as_hex_row(record) for record in produce(bootstrap, topic, records))


def upserted_records(base_ms: int) -> list[list[Record]]:
    """Three versions of each key, each key on one partition, then a tombstone for every
    fifth key: four batches, produced one after the other's rows are in the table, so
    the writer MERGEs updates and deletes into a table that exists."""
    versions: list[list[Record]] = [
        [
            {
                "key": f"k{k}".encode(),
                "value": f"v{version}-of-k{k}".encode(),
                "partition": k % 3,
                "headers": [("version", bytes([version]))],
                "timestamp": base_ms + version * 60_000 + k,
            }
            for k in range(KEYS)
        ]
        for version in range(3)
    ]
    deletes: list[Record] = [
        {
            "key": f"k{k}".encode(),
            "value": None,
            "partition": k % 3,
            "headers": [],
            "timestamp": base_ms + 300_000 + k,
        }
        for k in range(0, KEYS, 5)
    ]
    return [*versions, deletes]


def latest_per_key(rows: list[Row]) -> list[Row]:
    """What an upsert table must hold: the highest offset's row of each key, unless that
    is a tombstone."""
    latest: dict[str, Row] = {}
    for row in by_position(rows):
        latest[row["key"]] = row
    return by_position([row for row in latest.values() if row["value"] is not None])


def delta_rs_rows(table: pa.Table) -> list[Row]:
    """The table as delta-rs reads it, in the job's shape."""
    return by_position(
        [
            {
                "key": None if r["key"] is None else r["key"].hex().upper(),
                "partition": r["partition"],
                "offset": r["offset"],
                "timestamp_ms": int(r["timestamp"].timestamp() * 1000),
                "headers": [
                    {"key": h["key"], "value": h["value"].hex().upper()} for h in r["headers"]
                ],
                "value": r["value"].hex().upper(),
            }
            for r in table.to_pylist()
        ]
    )


def holds(wanted: list[Row]) -> Callable[[pa.Table], bool]:
    """Does a table, read by delta-rs, hold exactly ``wanted``?"""
    return lambda table: delta_rs_rows(table) == wanted


def spark_reads(tables: dict[str, Path], out: Path) -> dict[str, dict[str, list[Row]]]:
    python = VENV / "bin" / "python"
    assert python.exists(), (
        f"{python} is missing: `scripts/dev test` sets up {VENV.name}"
        " (the project with its delta-spark extra)"
    )
    env = dict(os.environ)
    # a Spark session of this process would point these at pyspark 4.3's interpreter
    for name in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_HOME", "PYTHONPATH"):
        env.pop(name, None)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    done = subprocess.run(
        [
            str(python),
            str(JOB),
            str(lib_dir("delta")),
            str(out),
            *(f"{name}={path}" for name, path in tables.items()),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=SPARK_TIMEOUT,
    )
    assert done.returncode == 0, f"the Spark job failed ({done.returncode}):\n{done.stderr[-5000:]}"
    answers: dict[str, dict[str, list[Row]]] = json.loads(out.read_text())
    return answers


def test_spark_reads_appended_and_upsert_tables_with_delta_spark_and_delta_rs(
    broker: BrokerProcess, lake: Path, tmp_path: Path
) -> None:
    base_ms = int(time.time() * 1000) - 3_600_000
    config = table_config("key_value", 300)
    create_topic(broker.bootstrap, "clicks", 3, config)
    create_topic(broker.bootstrap, "profiles", 3, {**config, "cleanup.policy": "compact"})
    clicks = produce_rows(broker.bootstrap, "clicks", sample(N, 3, base_ms, 1000))
    produced: list[Row] = []
    for batch in upserted_records(base_ms):
        produced += produce_rows(broker.bootstrap, "profiles", batch)
        profiles = latest_per_key(produced)
        wait_for_table(lake / "profiles", holds(profiles))
    assert len(profiles) == KEYS - KEYS // 5  # the test's own arithmetic, as a check of it
    assert deltalake.DeltaTable(str(lake / "profiles")).history()[0]["operation"] == "MERGE"
    wait_for_table(lake / "clicks", holds(clicks))

    spark = spark_reads({"clicks": lake / "clicks", "profiles": lake / "profiles"}, tmp_path / "a")
    for name, rows in (("clicks", clicks), ("profiles", profiles)):
        assert spark[name]["delta_spark"] == rows, name
        assert spark[name]["delta_rs"] == rows, name

"""Spark reads a table topic's table: the table the broker's writer keeps for a
``key_value`` topic, read with ``format("delta")`` (delta-spark) and with ``read_delta``
(delta-rs's snapshot, Spark's Parquet reader), holds the same rows as delta-rs reads
directly, and those are the records produced: key, value, partition, offset,
timestamp and headers (null keys, empty values and repeated header names among them).

delta-spark 4.4 runs only on pyspark 4.2, so Spark runs in a subprocess of
.venv-delta-spark (as in tests/spark_bridge/test_delta_spark_export.py); without that
virtualenv or jvm/delta's jars the test fails, saying how to get them.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import deltalake
import pytest
from brokerproc import BrokerProcess
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from jvm import lib_dir

pytestmark = pytest.mark.slow  # a broker and a Spark session

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv-delta-spark"
JOB = Path(__file__).with_name("spark_reads_table_job.py")
SPARK_TIMEOUT = 420.0  # Spark starts in 10-60 s on a loaded machine
N = 900


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("lake")


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory, lake: Path) -> Iterator[BrokerProcess]:
    data = tmp_path_factory.mktemp("spark-reads") / "data"
    with BrokerProcess(data, "--table-location", str(lake)) as proc:
        yield proc


def produce(bootstrap: str, topic: str) -> list[dict[str, Any]]:
    """N records over 3 partitions, as the reads should show them (hex, epoch ms)."""
    base_ms = int(time.time() * 1000) - 3_600_000
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    expected: list[dict[str, Any]] = []

    def acked(row: dict[str, Any]) -> Any:
        def report(error: Any, message: Any) -> None:
            assert error is None, error
            expected.append({**row, "offset": message.offset()})

        return report

    for i in range(N):
        key = None if i % 7 == 3 else f"key-{i}".encode()
        value = b"" if i % 11 == 5 else f"value-{i}".encode() * (1 + i % 3)
        headers = [] if i % 5 == 0 else [("a", b"1"), ("b", bytes([i % 256])), ("a", b"2")]
        row = {
            "key": None if key is None else key.hex().upper(),
            "partition": i % 3,
            "timestamp_ms": base_ms + i * 1000,
            "headers": [{"key": k, "value": v.hex().upper()} for k, v in headers],
            "value": value.hex().upper(),
        }
        producer.produce(
            topic,
            key=key,
            value=value,
            partition=i % 3,
            headers=sent_headers(headers),
            timestamp=base_ms + i * 1000,
            on_delivery=acked(row),
        )
    assert producer.flush(30) == 0
    return sorted(expected, key=lambda r: (r["partition"], r["offset"]))


def sent_headers(headers: list[tuple[str, bytes]]) -> list[tuple[str, str | bytes | None]]:
    """The headers as confluent-kafka's ``produce`` is typed to take them."""
    return [*headers]


def delta_rs_rows(path: Path, count: int, timeout: float = 60.0) -> list[dict[str, Any]]:
    """The table as delta-rs reads it, in the job's shape, once it holds ``count`` rows."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            table = deltalake.DeltaTable(str(path)).to_pyarrow_table()
            if table.num_rows >= count:
                break
        except deltalake.exceptions.TableNotFoundError:
            pass
        assert time.monotonic() < deadline, f"{path}: fewer than {count} rows after {timeout}s"
        time.sleep(0.2)
    return sorted(
        (
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
        ),
        key=lambda r: (r["partition"], r["offset"]),
    )


def spark_reads(path: Path, out: Path) -> dict[str, list[dict[str, Any]]]:
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
        [str(python), str(JOB), str(path), str(lib_dir("delta")), str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=SPARK_TIMEOUT,
    )
    assert done.returncode == 0, f"the Spark job failed ({done.returncode}):\n{done.stderr[-5000:]}"
    answers: dict[str, list[dict[str, Any]]] = json.loads(out.read_text())
    return answers


def test_spark_reads_a_table_topic_with_delta_spark_and_delta_rs(
    broker: BrokerProcess, lake: Path, tmp_path: Path
) -> None:
    topic = "clicks"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    config = {"headrace.table.mode": "key_value", "headrace.table.commit.interval.ms": "300"}
    admin.create_topics([NewTopic(topic, 3, config=config)])[topic].result(15)
    produced = produce(broker.bootstrap, topic)

    direct = delta_rs_rows(lake / topic, N)
    assert direct == produced

    spark = spark_reads(lake / topic, tmp_path / "answers.json")
    assert spark["delta_spark"] == produced
    assert spark["delta_rs"] == produced

"""What ``headrace spark export`` says when it cannot do its job: one line, the right one.

An unreachable broker gives one line on stderr within the ``--timeout`` asked for, not
librdkafka's log of every reconnect; a value that cannot be decoded names its record by
topic, partition and offset.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest
from brokerproc import BrokerProcess
from kafka_clients import Confluent, unique

from headrace import cli
from headrace.spark_bridge import DecodeError, ExportJob, json_values_to_arrow


def test_unreachable_broker_is_one_line_and_a_failure(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEADRACE_")}
    began = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "headrace",
            "spark",
            "export",
            "--bootstrap-servers",
            "127.0.0.1:1",
            "--topic",
            "orders",
            "--delta-path",
            str(tmp_path / "orders"),
            "--timeout",
            "2",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    took = time.monotonic() - began
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(
        "headrace spark: error: cannot reach the broker at 127.0.0.1:1 within 2s: "
    ), lines[0]
    assert "Connection refused" in lines[0]  # librdkafka's reason, without its prefixes
    assert "[thrd:" not in lines[0] and "in state" not in lines[0]
    assert took < 15  # the timeout, plus starting Python; not librdkafka's default wait
    assert not (tmp_path / "orders").exists()  # nothing written


# ------------------------------------------------------------------- undecodable values
@pytest.fixture(scope="module")
def bootstrap(broker_process: BrokerProcess) -> str:
    return broker_process.bootstrap


def _topic_with(bootstrap: str, values: dict[int, list[bytes]]) -> str:
    """A topic whose partition p holds ``values[p]`` at offsets 0, 1, ... in order."""
    from confluent_kafka import Producer

    topic = unique("decode")
    Confluent().create_topic(bootstrap, topic, max(values) + 1)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for partition, items in values.items():
        for value in items:
            producer.produce(topic, value=value, partition=partition)
    assert producer.flush(30) == 0
    return topic


def test_a_value_that_is_not_json_names_its_record(
    bootstrap: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    topic = _topic_with(
        bootstrap, {0: [b'{"n": 0}'], 1: [b'{"n": 1}', b'{"n": 2}', b"n=3", b'{"n": 4}']}
    )
    code = cli.main(
        [
            "spark",
            "export",
            "--bootstrap-servers",
            bootstrap,
            "--topic",
            topic,
            "--delta-path",
            str(tmp_path / "t"),
            "--value-format",
            "json",
            "--no-progress",
        ]
    )
    assert code == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(
        f"headrace spark: error: {topic} partition 1 offset 2: value is not JSON ("
    ), err[0]


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        (b"[1, 2]", "value is JSON but not an object (a list)"),
        (b'{"n": "three"}', "value does not fit the columns ("),
    ],
)
def test_a_value_of_the_wrong_shape_names_its_record(
    bootstrap: str, tmp_path: Path, bad: bytes, reason: str
) -> None:
    topic = _topic_with(
        bootstrap, {0: [b'{"n": 0}', b'{"n": 1}'], 1: [b'{"n": 2}', b'{"n": 3}', bad, b'{"n": 5}']}
    )
    job = ExportJob(bootstrap, topic, str(tmp_path / "t"), value_format="json")
    with pytest.raises(DecodeError) as caught:
        job.run()
    assert str(caught.value).startswith(f"{topic} partition 1 offset 2: {reason}"), caught.value
    assert caught.value.retriable is False


def test_decoding_reports_the_index_of_the_first_bad_value() -> None:
    values = pa.array([b'{"a": 1}', None, b'{"a": 2}', b'{"a": "x"}', b"{"], pa.binary())
    with pytest.raises(DecodeError) as caught:
        json_values_to_arrow(values)
    assert caught.value.row == 4  # parsing fails before the columns are built
    with pytest.raises(DecodeError) as caught:
        json_values_to_arrow(values[:4])
    assert caught.value.row == 3 and "does not fit the columns" in str(caught.value)
    good = json_values_to_arrow(values[:3])
    assert good.to_pylist() == [{"a": 1}, {"a": None}, {"a": 2}]

"""The reference Java client (kafka-clients, from the jars in the PyPI package
shigawire-apache-flink-libraries) against the broker: transactions, both isolation
levels."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest
from brokerproc import BrokerProcess
from confluent_kafka.admin import AdminClient, NewTopic

SOURCES = Path(__file__).parent / "java"


def _classpath() -> str:
    spec = importlib.util.find_spec("pyflink")  # a namespace package: no __file__
    assert spec is not None and spec.submodule_search_locations, (
        "the Java client tests need the jars of shigawire-apache-flink-libraries"
    )
    lib = Path(next(iter(spec.submodule_search_locations))) / "lib"
    assert (lib / "kafka-clients.jar").exists(), f"no kafka-clients.jar in {lib}"
    return f"{lib}/*"


def _java(program: str, *args: str) -> str:
    java = shutil.which("java")
    assert java, "the Java client tests need a JDK (java on PATH)"
    done = subprocess.run(
        [java, "-cp", _classpath(), str(SOURCES / f"{program}.java"), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.timeout(240)
def test_java_reads_committed_aborted_committed_transactions(broker_process: BrokerProcess) -> None:
    # Reported: read_uncommitted saw 200-289 of 300 records in most runs.
    admin = AdminClient({"bootstrap.servers": broker_process.bootstrap})
    admin.create_topics([NewTopic("java-txn", 2, 1)])["java-txn"].result(10)
    assert "produced" in _java("TxnProducer", broker_process.bootstrap, "java-txn")
    # 150 records and 3 markers per partition.
    for isolation, expected in (("read_uncommitted", 300), ("read_committed", 200)):
        out = _java(
            "CountingConsumer", broker_process.bootstrap, "java-txn", isolation, str(expected)
        )
        assert f"seen {expected}\n" in out, (isolation, out)
        assert "position 0 153" in out and "position 1 153" in out, (isolation, out)

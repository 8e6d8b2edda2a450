"""The reference Java client (kafka-clients, from the jars in the PyPI package
shigawire-apache-flink-libraries) against the broker: transactions, both isolation
levels."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from brokerproc import BrokerProcess
from java_tools import jdk_tool, kafka_classpath

SOURCES = Path(__file__).parent / "java"


def _java(program: str, *args: str) -> str:
    done = subprocess.run(
        [jdk_tool("java"), "-cp", kafka_classpath(), str(SOURCES / f"{program}.java"), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


ROUNDS = 6


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_java_reads_committed_aborted_committed_transactions(broker_process: BrokerProcess) -> None:
    # Finding 9: after a committed, an aborted and a committed transaction of 100
    # records each on a 2-partition topic, read_uncommitted saw 200-289 of 300 records
    # in most runs. Several rounds, half of them reading while the transactions are
    # written, each in a fresh topic (tests/conformance/java/TxnRounds.java).
    out = _java("TxnRounds", broker_process.bootstrap, str(ROUNDS))
    rounds = re.findall(r"^round (\d+) (read_\w+) (\d+) (\d+) (\d+)$", out, re.MULTILINE)
    assert len(rounds) == 2 * ROUNDS, out
    for _round, isolation, seen, *positions in rounds:
        assert int(seen) == (300 if isolation == "read_uncommitted" else 200), out
        # 150 records and 3 markers a partition: a reader that has all its records
        # stands before or after the last marker, never past the end.
        assert all(p in ("152", "153") for p in positions), out

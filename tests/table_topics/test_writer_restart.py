"""A table writer that dies while its broker runs is started again, and its tables go on
from the offsets they record: no record lost, none twice."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from brokerproc import BrokerProcess
from confluent_kafka import Producer
from table_topic_io import create_topic, table_config, table_rows
from table_topic_kills import PARTITIONS, gone, writer_processes


def produce(bootstrap: str, topic: str, values: range) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for i in values:
        producer.produce(topic, value=b"%d" % i, partition=i % PARTITIONS)
    assert producer.flush(15) == 0


def one_writer(broker_pid: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    while True:
        writers = writer_processes(broker_pid)
        if len(writers) == 1 or time.monotonic() > deadline:
            assert len(writers) == 1, writers
            return writers[0]
        time.sleep(0.05)


def test_a_killed_writer_is_started_again_and_its_table_goes_on(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    with BrokerProcess(tmp_path / "data", "--table-location", str(lake)) as broker:
        assert broker.proc is not None
        create_topic(broker.bootstrap, "orders", PARTITIONS, table_config("key_value", 100))
        produce(broker.bootstrap, "orders", range(0, 500))
        assert table_rows(lake / "orders", 500, timeout=30).num_rows == 500

        for kill in range(2):  # the second comes soon after the first start: a longer wait
            first = one_writer(broker.proc.pid, timeout=10)
            os.kill(first, signal.SIGKILL)
            assert gone(first, timeout=5)
            produce(broker.bootstrap, "orders", range(500 * (kill + 1), 500 * (kill + 2)))
            second = one_writer(broker.proc.pid, timeout=15)
            assert second != first

        table = table_rows(lake / "orders", 1500, timeout=30)
        values = sorted(int(v) for v in table["value"].to_pylist())
        assert values == list(range(1500))  # each record once
        assert broker.stop() == 0  # the restarted writer stops with its broker
    log = broker.log_path.read_text()
    assert log.count("the table writer exited (-9) while the broker runs") == 2, log[-3000:]
    assert "starting it again in 1 s" in log and "starting it again in 2 s" in log

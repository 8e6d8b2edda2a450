"""Exactly once into a topic's table: through SIGKILLs of the broker (whose table writer,
a child process, dies with it) while records stream in, each kill timed to land inside a table commit
(after its data file, before its log entry), every acknowledged record lands once; an
aborted transaction's records never land, an open one's only once it commits."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from brokerproc import BrokerProcess
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from deltalake import DeltaTable

PARTITIONS = 4
RECORDS = 300_000
KILLS = 3


def create_table_topic(bootstrap: str, topic: str, interval_ms: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    config = {
        "headrace.table.mode": "key_value",
        "headrace.table.commit.interval.ms": str(interval_ms),
    }
    admin.create_topics([NewTopic(topic, PARTITIONS, config=config)])[topic].result(15)


def rows_of(path: Path) -> pa.Table:
    try:
        return DeltaTable(str(path)).to_pyarrow_table(columns=["partition", "offset", "value"])
    except Exception:  # no table yet
        return pa.table({"partition": [], "offset": [], "value": []})


def wait_for_rows(path: Path, count: int, timeout: float) -> pa.Table:
    deadline = time.monotonic() + timeout
    while True:
        table = rows_of(path)
        if table.num_rows >= count or time.monotonic() > deadline:
            return table
        time.sleep(0.2)


def topic_contents(bootstrap: str, topic: str) -> dict[tuple[int, int], bytes]:
    """(partition, offset) -> value of every committed record, read by a plain consumer."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "check",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    found: dict[tuple[int, int], bytes] = {}
    ended: set[int] = set()
    deadline = time.monotonic() + 60
    try:
        while len(ended) < PARTITIONS and time.monotonic() < deadline:
            for message in consumer.consume(10_000, 0.5):
                error, partition, offset = message.error(), message.partition(), message.offset()
                assert partition is not None and offset is not None
                if error is not None:
                    if error.code() == -191:  # end of partition
                        ended.add(partition)
                    continue
                found[partition, offset] = message.value() or b""
    finally:
        consumer.close()
    assert len(ended) == PARTITIONS, "the topic was not read to its end"
    return found


def writer_processes(broker_pid: int) -> list[int]:
    """The pids of the table writer processes whose parent is ``broker_pid``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:  # it ended while looked at
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == broker_pid and b"table_topics._writer_process" in cmdline:
            found.append(int(entry.name))
    return found


def gone(pid: int, timeout: float) -> bool:
    """True once ``pid`` has ended (reaped, or a zombie) within ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return True
        if state == "Z":
            return True
        time.sleep(0.01)
    return False


def wait_for_a_commit_under_way(table: Path, timeout: float) -> bool:
    """Wait until a commit of ``table`` is under way: a data file is written that no log
    entry names yet (delta-rs writes a commit's files, then its entry). True when seen,
    False when ``timeout`` passed first."""

    def unnamed_files() -> int:
        files = sum(1 for _ in table.glob("*.parquet"))  # renamed into place when complete
        return files - sum(1 for _ in table.glob("_delta_log/*.json"))  # a file a commit here

    before = unnamed_files()  # files of commits a kill cut short earlier
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if unnamed_files() > before:
            return True
        time.sleep(0.0005)
    return False


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    return tmp_path / "lake"


@pytest.fixture
def broker(tmp_path: Path, lake: Path) -> Iterator[BrokerProcess]:
    with BrokerProcess(tmp_path / "data", "--table-location", str(lake)) as proc:
        yield proc
        proc.kill()


def test_every_acknowledged_record_lands_once_through_sigkills(
    broker: BrokerProcess, lake: Path
) -> None:
    create_table_topic(broker.bootstrap, "eos", interval_ms=200)
    rng = random.Random()
    seed = rng.randrange(2**32)
    rng.seed(seed)
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "message.timeout.ms": 120_000,
            "reconnect.backoff.max.ms": 200,
        }
    )
    acked: dict[tuple[int, int], bytes] = {}
    failed: list[str] = []

    def delivered(error: Any, message: Any) -> None:
        if error is None:
            acked[message.partition(), message.offset()] = message.value()
        else:
            failed.append(str(error))

    # the kills come while records stream in, at random points past each quarter
    kill_points = sorted(
        rng.randrange(q * RECORDS // 4, (2 * q + 1) * RECORDS // 8) for q in (1, 2, 3)
    )
    reached = [threading.Event() for _ in kill_points]
    # ... and before the producer is 20k records past its point, so never after the end
    killed = [threading.Event() for _ in kill_points]
    gates = [point + 20_000 for point in kill_points]

    def produce_all() -> None:
        # paced, about 20k records a second: the writer keeps up, so it is always at work
        for i in range(RECORDS):
            while True:
                try:
                    producer.produce(
                        "eos", value=b"%d" % i, partition=i % PARTITIONS, on_delivery=delivered
                    )
                    break
                except BufferError:
                    producer.poll(0.05)
            if i % 5_000 == 4_999:
                producer.poll(0)
                time.sleep(0.25)  # poll would return at the first delivery report
            for q, (point, gate) in enumerate(zip(kill_points, gates, strict=True)):
                if i == point:
                    reached[q].set()
                elif i == gate:
                    assert killed[q].wait(120)
        producer.flush(120)

    producing = threading.Thread(target=produce_all)
    producing.start()
    rows_when_killed: list[int] = []
    mid_commit: list[bool] = []
    try:
        for event in reached:
            assert event.wait(60)
            # the writer has committed since the last start: it is at work now
            before = rows_of(lake / "eos").num_rows
            assert wait_for_rows(lake / "eos", before + 1, timeout=30).num_rows > before
            time.sleep(rng.uniform(0, 0.2))
            rows_when_killed.append(rows_of(lake / "eos").num_rows)
            mid_commit.append(wait_for_a_commit_under_way(lake / "eos", timeout=3.0))
            assert broker.proc is not None
            writers = writer_processes(broker.proc.pid)
            assert len(writers) == 1, writers  # the writer is a child of the broker
            broker.kill()
            # no writer outlives its broker, to commit beside the restarted one's
            outlived = [pid for pid in writers if not gone(pid, timeout=5.0)]
            assert not outlived, f"table writers {outlived} outlived their broker"
            killed[len(rows_when_killed) - 1].set()
            broker.start()
    finally:
        producing.join(180)
    assert not failed, failed[:3]
    assert len(acked) == RECORDS
    # every kill came while the table was being written, none after it was complete
    assert rows_when_killed == sorted(rows_when_killed), rows_when_killed
    assert rows_when_killed[0] > 0 and rows_when_killed[-1] < RECORDS, rows_when_killed
    # and at least one between a commit's data file and its log entry
    assert any(mid_commit), mid_commit

    table = wait_for_rows(lake / "eos", RECORDS, timeout=30)
    pairs = list(zip(table["partition"].to_pylist(), table["offset"].to_pylist(), strict=True))
    assert len(pairs) == len(set(pairs)), f"duplicate rows (seed {seed})"
    landed = dict(zip(pairs, table["value"].to_pylist(), strict=True))
    assert landed == acked, f"seed {seed}"
    assert landed == topic_contents(broker.bootstrap, "eos")


def test_aborted_records_never_land_and_open_ones_only_once_committed(
    broker: BrokerProcess, lake: Path
) -> None:
    create_table_topic(broker.bootstrap, "txns", interval_ms=100)
    txn = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "table-txn"})
    txn.init_transactions(15)
    plain = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})

    def transaction(prefix: bytes, n: int, commit: bool) -> None:
        txn.begin_transaction()
        for i in range(n):
            txn.produce("txns", value=prefix + b"%d" % i, partition=i % PARTITIONS)
        if commit:
            txn.commit_transaction(15)
        else:
            txn.abort_transaction(15)

    transaction(b"committed-a-", 100, commit=True)
    transaction(b"aborted-", 100, commit=False)
    for i in range(20):  # records of no transaction between them
        plain.produce("txns", value=b"plain-%d" % i, partition=i % PARTITIONS)
    assert plain.flush(15) == 0
    transaction(b"committed-b-", 100, commit=True)

    expected = 220
    values = wait_for_rows(lake / "txns", expected, timeout=30)["value"]
    assert len(values) == expected
    assert not pc.any(pc.starts_with(values, "aborted-")).as_py()
    assert sorted(v.as_py() for v in values) == sorted(
        [b"committed-a-%d" % i for i in range(100)]
        + [b"plain-%d" % i for i in range(20)]
        + [b"committed-b-%d" % i for i in range(100)]
    )

    # an open transaction: its records are in the log, not yet in the table
    txn.begin_transaction()
    for i in range(50):
        txn.produce("txns", value=b"open-%d" % i, partition=i % PARTITIONS)
    txn.flush(15)
    for i in range(10):  # later records of no transaction wait behind it, as they should
        plain.produce("txns", value=b"later-%d" % i, partition=i % PARTITIONS)
    assert plain.flush(15) == 0
    time.sleep(1.5)  # many commit intervals
    assert rows_of(lake / "txns").num_rows == expected
    txn.commit_transaction(15)
    landed = wait_for_rows(lake / "txns", expected + 60, timeout=30)
    assert landed.num_rows == expected + 60
    assert sum(v.as_py().startswith(b"open-") for v in landed["value"]) == 50

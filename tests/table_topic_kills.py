"""Exactly once into a topic's table through SIGKILLs of the broker: the scenario that
``table_topics/test_table_eos.py`` runs on 300,000 records and ``benchmarks/table_topics_eos.py`` on a
million or more.

An idempotent producer streams ``records`` records (about 20,000 a second, so the writer
keeps up and is always at work) into a ``key_value`` table topic whose commit interval is
200 ms. ``kills`` times, at a random point of its own stretch of the stream, the broker
is SIGKILLed (its table writer, a child process, dies with it) while a table commit is
under way where the timing allows it (after the commit's data file, before its log
entry), and restarted. Then the table must hold every acknowledged record exactly once,
and the topic the same records.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
from brokerproc import BrokerProcess
from confluent_kafka import Consumer, Producer, TopicPartition
from table_topic_io import create_topic, read_table, table_config, table_when

PARTITIONS = 4
TOPIC = "eos"
PACE_RECORDS, PACE_S = 5_000, 0.25  # about 20,000 records a second
KILL_WINDOW = 20_000  # each kill comes before the producer is this far past its point


CHECKED = ["partition", "offset", "value"]  # the columns the checks read


def table_now(path: Path) -> pa.Table:
    """The table's checked columns as they are now (no rows before its first commit)."""
    return _or_empty(read_table(path, CHECKED))


def _or_empty(table: pa.Table | None) -> pa.Table:
    return pa.table({c: [] for c in CHECKED}) if table is None else table


def more_rows_than(rows: int, table: pa.Table) -> bool:
    return bool(table.num_rows > rows)


def at_least_rows(rows: int, table: pa.Table) -> bool:
    return bool(table.num_rows >= rows)


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
    deadline = time.monotonic() + 120
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


@dataclass
class Outcome:
    """What a run saw; ``problems`` is empty when it was exactly once."""

    seed: int
    acked: int = 0
    rows_when_killed: list[int] = field(default_factory=list)
    mid_commit: list[bool] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def kill_points(rng: random.Random, records: int, kills: int) -> list[int]:
    """One point in the first half of each of ``kills`` equal stretches past the first."""
    stretch = records // (kills + 1)
    return [rng.randrange(q * stretch, q * stretch + stretch // 2) for q in range(1, kills + 1)]


def run_through_kills(
    broker: BrokerProcess, lake: Path, records: int, kills: int, seed: int | None = None
) -> Outcome:
    """The scenario of this module's docstring on a started ``broker`` writing tables
    under ``lake``; the broker is left running."""
    seed = random.randrange(2**32) if seed is None else seed
    rng = random.Random(seed)
    outcome = Outcome(seed)
    create_topic(broker.bootstrap, TOPIC, PARTITIONS, table_config("key_value", 200))
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

    points = kill_points(rng, records, kills)
    reached = [threading.Event() for _ in points]
    killed = [threading.Event() for _ in points]
    gates = {point + KILL_WINDOW: q for q, point in enumerate(points)}
    starts = {point: q for q, point in enumerate(points)}

    def produce_all() -> None:
        for i in range(records):
            while True:
                try:
                    producer.produce(
                        TOPIC, value=b"%d" % i, partition=i % PARTITIONS, on_delivery=delivered
                    )
                    break
                except BufferError:
                    producer.poll(0.05)
            if i % PACE_RECORDS == PACE_RECORDS - 1:
                producer.poll(0)
                time.sleep(PACE_S)  # poll would return at the first delivery report
            if i in starts:
                reached[starts[i]].set()
            elif i in gates and not killed[gates[i]].wait(120):
                failed.append(f"kill {gates[i] + 1} never came")
                return
        producer.flush(120)

    table = lake / TOPIC
    producing = threading.Thread(target=produce_all)
    producing.start()
    try:
        for q, event in enumerate(reached):
            if not event.wait(120):
                outcome.problems.append(f"the producer never reached kill point {q + 1}")
                break
            # the writer has committed since the last start: it is at work now
            before = table_now(table).num_rows
            _, committed = table_when(table, partial(more_rows_than, before), 30, CHECKED)
            if not committed:
                outcome.problems.append(f"no table commit within 30 s before kill {q + 1}")
            time.sleep(rng.uniform(0, 0.2))
            outcome.rows_when_killed.append(table_now(table).num_rows)
            outcome.mid_commit.append(wait_for_a_commit_under_way(table, timeout=3.0))
            assert broker.proc is not None
            writers = writer_processes(broker.proc.pid)
            if len(writers) != 1:  # the writer is a child of the broker
                outcome.problems.append(f"table writers before kill {q + 1}: {writers}")
            broker.kill()
            # no writer outlives its broker, to commit beside the restarted one's
            outlived = [pid for pid in writers if not gone(pid, timeout=5.0)]
            if outlived:
                outcome.problems.append(f"table writers {outlived} outlived their broker")
            killed[q].set()
            broker.start()
    finally:
        for event in killed:  # a failed kill must not leave the producer waiting
            event.set()
        producing.join(300)
    outcome.acked = len(acked)
    outcome.problems += failed[:3]
    if len(acked) != records:
        outcome.problems.append(f"{len(acked):,} of {records:,} records acknowledged")
    # the rows that should be there, and any more that came with them; if fewer came, the
    # comparison below says which
    landed_table = _or_empty(table_when(table, partial(at_least_rows, len(acked)), 60, CHECKED)[0])
    pairs = list(
        zip(landed_table["partition"].to_pylist(), landed_table["offset"].to_pylist(), strict=True)
    )
    if len(pairs) != len(set(pairs)):
        outcome.problems.append(f"{len(pairs) - len(set(pairs)):,} duplicate rows")
    landed = dict(zip(pairs, landed_table["value"].to_pylist(), strict=True))
    if landed != acked:
        missing = len(acked.keys() - landed.keys())
        extra = len(landed.keys() - acked.keys())
        outcome.problems.append(
            f"the table differs from the acknowledged records: "
            f"{missing:,} missing, {extra:,} not acknowledged"
        )
    if landed != topic_contents(broker.bootstrap, TOPIC):
        outcome.problems.append("the table differs from the topic read back")
    return outcome

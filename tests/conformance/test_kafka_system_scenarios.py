"""Kafka's system-test clients through broker restarts and consumer bounces.

In the manner of Kafka's ducktape tests (``consumer_test.py``, ``replication_test.py``):
``VerifiableProducer`` (idempotent, acks=all) writes increasing integers while a group
of three ``VerifiableConsumer`` processes, committing after each poll, reads them. During
the run the broker is restarted cleanly (SIGTERM, start on the same data dir and port),
one consumer is killed with SIGKILL and replaced, and the broker is killed with SIGKILL
and started again. Both group protocols run: classic and KIP-848's consumer protocol.

Checks, from the tools' JSON events and one final read of the topic:

* every record the producer reported acknowledged is consumed by the group;
* the committed offset of a partition never moves backwards;
* every acknowledged record is in the log at the offset the producer was told, and
  no acknowledged value is in the log twice (the producer is idempotent).
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from brokerproc import BrokerProcess
from kafka_clients import Confluent, present, unique

from jvm import java_command

pytestmark = [pytest.mark.conformance, pytest.mark.slow]

PRODUCER = "org.apache.kafka.tools.VerifiableProducer"
CONSUMER = "org.apache.kafka.tools.VerifiableConsumer"

PARTITIONS = 3
CONSUMERS = 3
MESSAGES = 2000
THROUGHPUT = 200  # records a second: the run lasts about ten seconds
SESSION_TIMEOUT_MS = 6000


@dataclass
class Tool:
    """One JVM tool process; its stdout's JSON events are collected as they come."""

    name: str
    proc: subprocess.Popen[str]
    events: list[dict[str, Any]] = field(default_factory=list)
    reader: threading.Thread | None = None

    def named(self, name: str) -> list[dict[str, Any]]:
        return [e for e in list(self.events) if e.get("name") == name]

    def stop(self, sig: int = signal.SIGTERM, wait: float = 20) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(wait)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.reader is not None:
            self.reader.join(10)
        if self.proc.stdout is not None and (self.reader is None or not self.reader.is_alive()):
            self.proc.stdout.close()


class Events:
    """Every tool's events in the order the test read them, under one lock."""

    def __init__(self, stderr_dir: Path) -> None:
        self.lock = threading.Lock()
        self.ordered: list[tuple[str, dict[str, Any]]] = []
        self.stderr_dir = stderr_dir
        self.tools: list[Tool] = []

    def launch(self, name: str, main_class: str, *args: str) -> Tool:
        err = open(self.stderr_dir / f"{name}.stderr", "w")  # noqa: SIM115 - the child's
        proc = subprocess.Popen(
            java_command(main_class, *args),
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
        err.close()
        tool = Tool(name, proc)

        def read() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                with self.lock:
                    tool.events.append(event)
                    self.ordered.append((name, event))

        tool.reader = threading.Thread(target=read, daemon=True)
        tool.reader.start()
        self.tools.append(tool)
        return tool

    def stderr(self, name: str) -> str:
        try:
            return (self.stderr_dir / f"{name}.stderr").read_text()[-2000:]
        except FileNotFoundError:
            return ""

    def stop_all(self) -> None:
        for tool in self.tools:
            tool.stop()


def _consumed(tools: list[Tool]) -> set[tuple[int, int]]:
    """(partition, offset) of every record any consumer reported."""
    got: set[tuple[int, int]] = set()
    for tool in tools:
        for e in tool.named("record_data"):
            got.add((int(e["partition"]), int(e["offset"])))
    return got


def _assigned(tools: list[Tool]) -> set[int]:
    """The partitions currently assigned across live consumers, from their events."""
    owned: set[int] = set()
    for tool in tools:
        if tool.proc.poll() is not None:
            continue
        mine: set[int] = set()
        for e in list(tool.events):
            parts = {int(p["partition"]) for p in e.get("partitions", [])}
            if e.get("name") == "partitions_assigned":
                mine |= parts
            elif e.get("name") == "partitions_revoked":
                mine -= parts
        owned |= mine
    return owned


def _wait(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def _read_log(bs: str, topic: str) -> list[tuple[int, int, bytes]]:
    """(partition, offset, value) of every record in the topic, read once from the start."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer(
        {"bootstrap.servers": bs, "group.id": unique("reader"), "enable.auto.commit": False}
    )
    try:
        ends = {
            p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(PARTITIONS)
        }
        c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        got: list[tuple[int, int, bytes]] = []
        positions = dict.fromkeys(range(PARTITIONS), 0)
        deadline = time.monotonic() + 30
        while any(positions[p] < ends[p] for p in ends) and time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                assert m.error() is None, str(m.error())
                p, off = present(m.partition()), present(m.offset())
                got.append((p, off, present(m.value())))
                positions[p] = off + 1
        assert all(positions[p] >= ends[p] for p in ends), (positions, ends)
        return got
    finally:
        c.close()


@pytest.mark.timeout(150)
@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_produce_consume_through_broker_restarts_and_consumer_bounce(
    tmp_path: Path, protocol: str
) -> None:
    broker = BrokerProcess(
        tmp_path / "data",
        "--group-min-session-timeout-ms",
        "1000",
        "--group-consumer-session-timeout-ms",
        str(SESSION_TIMEOUT_MS),
        "--group-consumer-heartbeat-interval-ms",
        "1000",
    ).start()
    events = Events(tmp_path)
    try:
        bs = broker.bootstrap
        topic = unique("system")
        group = unique("group")
        Confluent().create_topic(bs, topic, PARTITIONS)
        props = tmp_path / "producer.properties"
        props.write_text(
            # VerifiableProducer sets retries=0 unless told: idempotence needs retries.
            "enable.idempotence=true\nacks=all\nretries=2147483647\n"
            "max.in.flight.requests.per.connection=5\nlinger.ms=5\n"
        )

        consumer_args = [
            "--topic",
            topic,
            "--bootstrap-server",
            bs,
            "--group-id",
            group,
            "--group-protocol",
            protocol,
            "--reset-policy",
            "earliest",
            "--verbose",
        ]
        if protocol == "classic":
            consumer_args += ["--session-timeout", str(SESSION_TIMEOUT_MS)]
        consumers = [
            events.launch(f"consumer-{i}", CONSUMER, *consumer_args) for i in range(CONSUMERS)
        ]
        _wait(
            lambda: _assigned(consumers) == set(range(PARTITIONS)),
            60,
            "the group to own every partition",
        )

        producer = events.launch(
            "producer",
            PRODUCER,
            "--topic",
            topic,
            "--bootstrap-server",
            bs,
            "--max-messages",
            str(MESSAGES),
            "--throughput",
            str(THROUGHPUT),
            "--acks",
            "-1",
            "--command-config",
            str(props),
        )

        def acked() -> int:
            code = producer.proc.poll()
            assert code in (None, 0), f"producer exited {code}: {events.stderr('producer')}"
            return len(producer.named("producer_send_success"))

        # A clean restart once records flow, a consumer bounce, then a hard kill.
        _wait(lambda: acked() >= MESSAGES // 5, 60, "a fifth of the records acknowledged")
        assert broker.stop() == 0, broker.log()
        broker.start()
        _wait(lambda: acked() >= 2 * MESSAGES // 5, 60, "two fifths acknowledged")
        victim = consumers[1]
        victim.stop(signal.SIGKILL)
        consumers.append(events.launch(f"consumer-{CONSUMERS}", CONSUMER, *consumer_args))
        _wait(lambda: acked() >= 3 * MESSAGES // 5, 60, "three fifths acknowledged")
        broker.kill()
        broker.start()

        assert producer.proc.wait(90) == 0, events.stderr("producer")
        producer.stop()  # the process has ended: this waits for its last events
        shutdown = producer.named("shutdown_complete")
        assert shutdown, producer.events[-3:]
        successes = producer.named("producer_send_success")
        errors = producer.named("producer_send_error")
        acked_records = {(int(e["partition"]), int(e["offset"])): e["value"] for e in successes}
        assert len(acked_records) == len(successes), "two acknowledgements for one offset"
        assert len(successes) + len(errors) == MESSAGES, (len(successes), len(errors))
        assert successes, "nothing acknowledged"

        # Every acknowledged record is consumed by the group.
        _wait(
            lambda: set(acked_records) <= _consumed(consumers),
            60,
            "the group to consume every acknowledged record",
        )
        # The group takes the replacement in once the killed member's session expires.
        replacement = consumers[-1]
        _wait(
            lambda: any(e["partitions"] for e in replacement.named("partitions_assigned")),
            30,
            "the consumer started in the bounced one's place to be given a partition",
        )
        for tool in consumers:
            tool.stop()
        consumed = _consumed(consumers)
        missing = sorted(set(acked_records) - consumed)
        assert not missing, f"acknowledged, never consumed: {missing[:20]}"
        # What the consumers saw at an acknowledged offset is the value acknowledged there.
        for tool in consumers:
            for e in tool.named("record_data"):
                where = (int(e["partition"]), int(e["offset"]))
                if where in acked_records:
                    assert e["value"] == acked_records[where], (where, e)

        # Committed offsets never move backwards, in the order the commits were reported.
        committed: dict[int, int] = {}
        commits = 0
        with events.lock:
            ordered = list(events.ordered)
        for who, e in ordered:
            if e.get("name") != "offsets_committed" or not e.get("success"):
                continue
            for o in e["offsets"]:
                p, off = int(o["partition"]), int(o["offset"])
                assert off >= committed.get(p, -1), (
                    f"{who} committed {off} for partition {p} after {committed[p]}"
                )
                committed[p] = off
                commits += 1
        assert commits, "no successful commit reported"
        ends = {p: 1 + max(o for q, o in acked_records if q == p) for p, _ in acked_records}
        for p, end in ends.items():
            assert committed.get(p, -1) >= end, (p, committed.get(p), end)

        # The log: every acknowledged record where the producer was told, no value twice.
        log = _read_log(bs, topic)
        at = {(p, off): value.decode() for p, off, value in log}
        for where, value in acked_records.items():
            assert at.get(where) == value, (where, value, at.get(where))
        counts = Counter(value.decode() for _, _, value in log)
        twice = sorted((v for v, n in counts.items() if n > 1), key=int)
        assert not twice, f"values in the log more than once: {twice[:20]}"
        assert set(counts) <= {str(i) for i in range(MESSAGES)}, "values nobody produced"
    finally:
        events.stop_all()
        if broker.proc is not None:
            broker.stop()

"""What the peer-application tests share: the peers' interpreter, the peer process, and a
client side (confluent-kafka from the project's own virtualenv) that produces the input,
watches the group's committed offsets and last stable offsets, and reads back the output;
and a reader of raw record batches, for the facts no client shows: which batches are
transactional, which are commit or abort markers, how many records compaction removed.

The peers run under ``.venv-peers/bin/python`` (``scripts/dev test`` creates it from
``tests/peers/requirements.txt``): Quix Streams pins a confluent-kafka other than the
project's, so they cannot share one virtualenv.
"""

from __future__ import annotations

import json
import os
import signal
import struct
import subprocess
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from kafka_clients import present
from kio.schema.types import TopicName
from kio.static.primitive import i32, i32Timedelta, i64

ROOT = Path(__file__).resolve().parents[2]
PEERS_PYTHON = ROOT / ".venv-peers" / "bin" / "python"
PARTITIONS = 3
USERS = 8
PAGES = ("/", "/pricing", "/docs", "/blog")
BASE_MS = 1_700_000_000_000
STEP_MS = 500  # event time between views: a one-minute window sees 15 views per user


def peers_python() -> str:
    """The peers' interpreter; a missing one fails the test with what to run, never skips."""
    if not PEERS_PYTHON.exists():
        pytest.fail(
            f"{PEERS_PYTHON} is missing: run `scripts/dev test` once, or create it with "
            "`python3 -m venv .venv-peers && .venv-peers/bin/pip install -r "
            "tests/peers/requirements.txt`",
            pytrace=False,
        )
    return str(PEERS_PYTHON)


@dataclass(frozen=True)
class Record:
    key: bytes
    value: bytes
    partition: int
    offset: int


@dataclass(frozen=True)
class Batch:
    """One record batch as the log holds it: where it sits and the flags a transaction sets."""

    partition: int
    base_offset: int
    last_offset: int
    records: int  # records still in it; compaction removes some without moving the others
    producer_id: int
    transactional: bool
    control: bool
    marker: str | None  # "commit" or "abort" for a control batch


# Offsets into a magic-2 batch header: batchLength, attributes, lastOffsetDelta,
# producerId, recordsCount.
_HEADER = struct.Struct(">qi4xbihiqqqhii")
_TRANSACTIONAL = 0x10
_CONTROL = 0x20
_MARKERS = {0: "abort", 1: "commit"}


def _varint(data: bytes, at: int) -> tuple[int, int]:
    """A zig-zag varint at ``at``: its value and where the next field starts."""
    shift = raw = 0
    while True:
        byte = data[at]
        at += 1
        raw |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), at


def _marker(data: bytes, records_at: int) -> str:
    """The kind of a control batch, from its one record's key (version, type)."""
    at = _varint(data, records_at)[1] + 1  # record length, attributes
    at = _varint(data, at)[1]  # timestamp delta
    at = _varint(data, at)[1]  # offset delta
    key_length, at = _varint(data, at)
    assert key_length >= 4, "a control record's key holds its version and type"
    return _MARKERS.get(struct.unpack_from(">h", data, at + 2)[0], "unknown")


def parse_batches(partition: int, data: bytes) -> list[Batch]:
    """The whole batches in ``data``; a fetch may end inside one, which is left out."""
    batches = []
    at = 0
    while at + _HEADER.size <= len(data):
        (
            base,
            length,
            _magic,
            _crc,
            attributes,
            last_delta,
            _first_ts,
            _max_ts,
            producer_id,
            _epoch,
            _sequence,
            count,
        ) = _HEADER.unpack_from(data, at)
        if at + 12 + length > len(data):
            break
        control = bool(attributes & _CONTROL)
        marker = _marker(data, at + _HEADER.size) if control else None
        batches.append(
            Batch(
                partition,
                base,
                base + last_delta,
                count,
                producer_id,
                bool(attributes & _TRANSACTIONAL),
                control,
                marker,
            )
        )
        at += 12 + length
    return batches


def page_views(first: int, count: int) -> list[tuple[bytes, bytes, int]]:
    """Views ``first`` .. ``first + count - 1`` as ``(user, {"page"} JSON, timestamp)``;
    consecutive batches continue one another, in users and in event time."""
    views = []
    for i in range(first, first + count):
        user = f"user-{(i * 3) % USERS}".encode()
        value = json.dumps({"page": PAGES[i % len(PAGES)]}).encode()
        views.append((user, value, BASE_MS + i * STEP_MS))
    return views


def running_counts(keys: Iterable[str]) -> dict[str, list[int]]:
    """What a running count emits per key for ``keys`` in order: 1, 2, ... n."""
    seen: dict[str, int] = {}
    for key in keys:
        seen[key] = seen.get(key, 0) + 1
    return {key: list(range(1, n + 1)) for key, n in seen.items()}


def by_key(pairs: Iterable[tuple[str, int]]) -> dict[str, list[int]]:
    """Output values grouped per key, in the order read (one key lives in one partition)."""
    grouped: dict[str, list[int]] = {}
    for key, value in pairs:
        grouped.setdefault(key, []).append(value)
    return grouped


def differences(got: dict[str, list[int]], want: dict[str, list[int]]) -> list[str]:
    """A readable account of where ``got`` differs from ``want``, empty when equal."""
    lines = [
        f"{key}: got {got.get(key)}, want {want.get(key)}"
        for key in sorted(set(got) | set(want))
        if got.get(key) != want.get(key)
    ]
    return lines[:10] + ([f"... and {len(lines) - 10} more"] if len(lines) > 10 else [])


class PeerProcess:
    """One run of a peer application, its output going to a log file the failures quote."""

    def __init__(self, args: Sequence[str], log_path: Path) -> None:
        self.log_path = log_path
        with open(log_path, "ab") as log:
            # Quieten the peers' own deprecation chatter; it is not what is under test.
            self.proc = subprocess.Popen(
                [peers_python(), *args],
                stdout=log,
                stderr=log,
                cwd=ROOT,
                env={**os.environ, "PYTHONWARNINGS": "ignore"},
            )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def logged(self, text: str) -> bool:
        return text in self.log_path.read_text(errors="replace")

    def check_running(self) -> None:
        if self.proc.poll() is not None:
            raise AssertionError(f"peer exited with {self.proc.returncode}:\n{self.log()}")

    def wait_for(self, what: str, done: Callable[[], bool], timeout: float = 45) -> None:
        deadline = time.monotonic() + timeout
        while not done():
            self.check_running()
            if time.monotonic() > deadline:
                raise AssertionError(f"peer did not {what} within {timeout:.0f}s:\n{self.log()}")
            time.sleep(0.1)

    def terminate(self) -> int:
        """SIGTERM, as a service manager stops it: the peer shuts down cleanly."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
            raise AssertionError(f"peer ignored SIGTERM for 30s:\n{self.log()}") from None

    def pause(self) -> None:
        """SIGSTOP: every thread of the peer stands still, its sockets open, until resumed."""
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.proc.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL: nothing of the peer's shutdown runs, as in a crash."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def ensure_stopped(self) -> None:
        if self.proc.poll() is None:
            self.kill()


def kill_inside_a_transaction(
    cluster: Cluster, app: PeerProcess, topic: str, timeout: float = 30
) -> None:
    """SIGKILL ``app`` while a transaction of its holds records of ``topic`` open.

    The process is first stopped with SIGSTOP, so that it cannot commit between the
    look at the broker and the kill: a transaction seen open then dies open.
    """
    deadline = time.monotonic() + timeout
    while True:
        app.check_running()
        app.pause()
        time.sleep(0.2)  # a commit already on the wire reaches the broker meanwhile
        if cluster.open_transactions(topic):
            app.kill()
            return
        app.resume()
        assert time.monotonic() < deadline, f"no open transaction on {topic} in {timeout:.0f}s"
        time.sleep(0.05)


class Cluster:
    """The test's own clients of the broker under test."""

    def __init__(self, bootstrap: str) -> None:
        from confluent_kafka.admin import AdminClient

        self.bootstrap = bootstrap
        self.admin = AdminClient({"bootstrap.servers": bootstrap})
        self._watchers: dict[str, Any] = {}

    def close(self) -> None:
        for consumer in self._watchers.values():
            consumer.close()

    def create(self, *topics: str, partitions: int = PARTITIONS) -> None:
        from confluent_kafka.admin import NewTopic

        for future in self.admin.create_topics(
            [NewTopic(t, partitions, 1) for t in topics]
        ).values():
            future.result(10)

    def produce(self, topic: str, records: Sequence[tuple[bytes, bytes, int]]) -> None:
        """Send ``(key, value, timestamp_ms)`` in order, idempotently, and wait for acks."""
        from confluent_kafka import Producer

        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "enable.idempotence": True,
                "partitioner": "murmur2_random",
                "linger.ms": 5,
            }
        )
        for key, value, ts in records:
            producer.produce(topic, value, key, timestamp=ts)
        assert producer.flush(30) == 0, "input not acknowledged"

    def produce_to_each_partition(self, topic: str, key: bytes, value: bytes) -> None:
        """One record ``key -> value`` in every partition of ``topic``, acknowledged."""
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True})
        for partition in range(self.partitions(topic)):
            producer.produce(topic, value, key, partition=partition)
        assert producer.flush(30) == 0, "records not acknowledged"

    def topics(self) -> set[str]:
        return set(self.admin.list_topics(timeout=10).topics)

    def config(self, topic: str) -> dict[str, str]:
        from confluent_kafka.admin import ConfigResource, ResourceType

        resource = ConfigResource(ResourceType.TOPIC, topic)
        entries = self.admin.describe_configs([resource])[resource].result(10)
        return {name: entry.value for name, entry in entries.items()}

    def alter(self, topic: str, configs: dict[str, str]) -> None:
        from confluent_kafka.admin import (
            AlterConfigOpType,
            ConfigEntry,
            ConfigResource,
            ResourceType,
        )

        entries = [
            ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
            for name, value in configs.items()
        ]
        resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries)
        for future in self.admin.incremental_alter_configs([resource]).values():
            future.result(10)

    def partitions(self, topic: str) -> int:
        return len(self.admin.list_topics(topic, timeout=10).topics[topic].partitions)

    def ends(self, topic: str) -> list[int]:
        from confluent_kafka import TopicPartition

        watcher = self._watcher("headrace-peers-watcher")
        return [
            watcher.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(self.partitions(topic))
        ]

    def stable_ends(self, topic: str) -> list[int]:
        """The last stable offset of each partition: where read_committed readers stop."""
        from confluent_kafka import TopicPartition

        watcher = self._watcher("headrace-peers-watcher-rc", "read_committed")
        return [
            watcher.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(self.partitions(topic))
        ]

    def open_transactions(self, topic: str) -> bool:
        """Whether some transaction holds records of ``topic`` back from read_committed readers."""
        return self.stable_ends(topic) != self.ends(topic)

    def batches(self, topic: str) -> list[Batch]:
        """Every record batch of ``topic``, markers included, as the broker serves it."""
        from kio.schema.fetch.v11 import request as fetch
        from rawkafka import RawClient

        out: list[Batch] = []
        raw = RawClient(self.bootstrap)
        try:
            for partition in range(self.partitions(topic)):
                offset = 0
                while True:
                    body = fetch.FetchRequest(
                        max_wait=i32Timedelta.parse(timedelta(0)),
                        min_bytes=i32(0),
                        forgotten_topics_data=(),
                        topics=(
                            fetch.FetchTopic(
                                topic=TopicName(topic),
                                partitions=(
                                    fetch.FetchPartition(
                                        partition=i32(partition),
                                        fetch_offset=i64(offset),
                                        partition_max_bytes=i32(1 << 20),
                                    ),
                                ),
                            ),
                        ),
                    )
                    [data] = raw.request(1, 11, body).responses[0].partitions
                    assert data.error_code == 0, f"fetching {topic}/{partition}: {data.error_code}"
                    got = parse_batches(partition, data.records or b"")
                    out += got
                    if not got or got[-1].last_offset + 1 >= data.high_watermark:
                        break
                    offset = got[-1].last_offset + 1
        finally:
            raw.close()
        return out

    def removed_by_cleaner(self, topic: str) -> int:
        """Offsets below the end of ``topic`` that no record holds any more.

        Producers leave no gaps (a marker is a record too), and the log starts at 0 as
        long as retention has deleted nothing, so every missing offset is one the log
        cleaner compacted away.
        """
        present = sum(b.records for b in self.batches(topic))
        return sum(self.ends(topic)) - present

    def committed(self, group: str, topic: str) -> list[int]:
        """The group's committed offsets on ``topic``, 0 where none is committed yet."""
        from confluent_kafka import TopicPartition

        got = self._watcher(group).committed(
            [TopicPartition(topic, p) for p in range(self.partitions(topic))], timeout=10
        )
        return [max(tp.offset, 0) for tp in got]

    def caught_up(self, group: str, topic: str) -> Callable[[], bool]:
        """A condition: the group has committed the end of every partition of ``topic``."""
        ends = self.ends(topic)
        return lambda: self.committed(group, topic) == ends

    def _watcher(self, group: str, isolation: str = "read_uncommitted") -> Any:
        # Never subscribes, so it never joins the group it reads offsets of.
        from confluent_kafka import Consumer

        if group not in self._watchers:
            self._watchers[group] = Consumer(
                {
                    "bootstrap.servers": self.bootstrap,
                    "group.id": group,
                    "enable.auto.commit": False,
                    "isolation.level": isolation,
                }
            )
        return self._watchers[group]

    def read(self, topic: str, isolation: str = "read_committed") -> list[Record]:
        """Every record of ``topic`` visible under ``isolation``, in offset order per partition."""
        from confluent_kafka import Consumer, KafkaError, TopicPartition

        partitions = self.partitions(topic)
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": "headrace-peers-reader",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "isolation.level": isolation,
            }
        )
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        out: list[Record] = []
        at_end: set[int] = set()
        deadline = time.monotonic() + 30
        try:
            while len(at_end) < partitions:
                assert time.monotonic() < deadline, f"{topic} not read to its end within 30s"
                for message in consumer.consume(10_000, timeout=0.5):
                    error = message.error()
                    if error is None:
                        out.append(
                            Record(
                                present(message.key()),
                                present(message.value()),
                                present(message.partition()),
                                present(message.offset()),
                            )
                        )
                    elif error.code() == KafkaError._PARTITION_EOF:
                        at_end.add(present(message.partition()))
                    else:
                        raise AssertionError(f"reading {topic}: {error}")
        finally:
            consumer.close()
        return out

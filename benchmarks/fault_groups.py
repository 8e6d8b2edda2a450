"""Group consumers for the fault checker (benchmarks/fault_checker.py), and the
poll-skip check of Jepsen's Kafka test.

Each consumer (confluent-kafka) subscribes to the topic in a consumer group, commits
what it consumed after every poll (and on revocation), and is closed and replaced
after a random lifetime: half the time after a last commit, half the time without one,
as if it crashed. Every record it consumes is noted with the *session* it belongs to:
one session is one consumer's hold of one partition, from the assignment to the
revocation (or the consumer's end).

Afterwards, against the partition as a full read at the same isolation level shows it:
- poll skip, within a session: two records consumed one after the other with a record
  of the log between them that the session never saw;
- poll skip, at a session's start: the first record consumed lies past a record of the
  log that no commit covers, that is, past a record at or above the highest offset any
  member of the group tried to commit (an attempt whose answer was lost counts, so an
  unknown outcome never raises a false alarm) before that first record arrived;
- non-monotonic poll: a session consuming an offset at or below one it already had;
- phantom read: a record consumed that the full read does not hold.
Consuming a record twice across sessions is the at-least-once contract, not an anomaly.
"""

from __future__ import annotations

import random
import threading
import time
from bisect import bisect_left, bisect_right
from collections import defaultdict
from contextlib import suppress
from dataclasses import dataclass, field
from itertools import count, pairwise
from typing import Any

# Offsets and values of one partition as a full read returns them, in offset order.
Log = dict[int, list[tuple[int, str]]]


@dataclass(frozen=True)
class Consumed:
    seq: int  # position in the group's history, across all its consumers
    session: int
    partition: int
    offset: int
    value: str


@dataclass
class GroupHistory:
    group: str
    isolation: str
    consumed: list[Consumed] = field(default_factory=list)
    # (seq, partition, offset) of every commit attempted, answered or not
    commits: list[tuple[int, int, int]] = field(default_factory=list)
    restarts: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    _seq: count[int] = field(default_factory=count)

    def next_seq(self) -> int:
        with self.lock:
            return next(self._seq)

    @property
    def sessions(self) -> int:
        return len({c.session for c in self.consumed})


class _Member:
    """One consumer's life in the group: its sessions and what it has yet to commit."""

    def __init__(self, topic: str, history: GroupHistory) -> None:
        self.topic = topic
        self.history = history
        self.sessions: dict[int, int] = {}  # partition -> session of this member's hold
        self.uncommitted: dict[int, int] = {}  # partition -> next offset, not committed

    def commit(self, consumer: Any, partitions: list[int]) -> None:
        from confluent_kafka import KafkaException, TopicPartition

        offsets = {p: self.uncommitted.pop(p) for p in partitions if p in self.uncommitted}
        if not offsets:
            return
        seq = self.history.next_seq()
        with self.history.lock:
            self.history.commits += [(seq, p, o) for p, o in offsets.items()]
        # On an error it is not committed (or unknown): the next owner reads these again.
        with suppress(KafkaException):
            consumer.commit(
                offsets=[TopicPartition(self.topic, p, o) for p, o in offsets.items()],
                asynchronous=False,
            )

    def on_assign(self, consumer: Any, partitions: list[Any]) -> None:
        for tp in partitions:
            self.sessions[tp.partition] = self.history.next_seq()

    def on_revoke(self, consumer: Any, partitions: list[Any]) -> None:
        self.commit(consumer, [tp.partition for tp in partitions])
        for tp in partitions:
            self.sessions.pop(tp.partition, None)

    def on_lost(self, consumer: Any, partitions: list[Any]) -> None:
        for tp in partitions:
            self.sessions.pop(tp.partition, None)
            self.uncommitted.pop(tp.partition, None)

    def note(self, message: Any) -> None:
        partition, offset = message.partition(), message.offset()
        consumed = Consumed(
            self.history.next_seq(),
            self.sessions.get(partition, -1),  # -1: outside any assignment
            partition,
            offset,
            message.value().decode(),
        )
        with self.history.lock:
            self.history.consumed.append(consumed)
        self.uncommitted[partition] = offset + 1


def group_consumer(
    bootstrap: str,
    topic: str,
    history: GroupHistory,
    stop: threading.Event,
    rng: random.Random,
    lifetime_s: tuple[float, float] = (5.0, 30.0),
) -> None:
    """Consume in ``history.group`` until ``stop``, replacing the consumer now and then."""
    from confluent_kafka import Consumer, KafkaException

    while not stop.is_set():
        member = _Member(topic, history)
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": history.group,
                "isolation.level": history.isolation,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 10_000,
                "heartbeat.interval.ms": 1_000,
            }
        )
        consumer.subscribe(
            [topic], on_assign=member.on_assign, on_revoke=member.on_revoke, on_lost=member.on_lost
        )
        retire_at = time.monotonic() + rng.uniform(*lifetime_s)
        try:
            while not stop.is_set() and time.monotonic() < retire_at:
                for message in consumer.consume(500, 0.5):
                    if message.error() is None:
                        member.note(message)
                member.commit(consumer, list(member.uncommitted))
        except KafkaException:
            pass  # a fatal consumer error: a new consumer takes over
        finally:
            if rng.random() < 0.5:  # else leave as if crashed, the last polls uncommitted
                member.commit(consumer, list(member.uncommitted))
            consumer.close()
            with history.lock:
                history.restarts += 1


def poll_skips(history: GroupHistory, log: Log) -> dict[str, list[str]]:
    """The anomalies of one group's consumption against ``log``, the partitions as a
    full read at the group's isolation level returns them."""
    anomalies: dict[str, list[str]] = defaultdict(list)
    offsets = {p: [o for o, _ in records] for p, records in log.items()}
    present = {(p, o, v) for p, records in log.items() for o, v in records}
    by_session: dict[int, list[Consumed]] = defaultdict(list)
    for consumed in sorted(history.consumed, key=lambda c: c.seq):
        by_session[consumed.session].append(consumed)
        if (consumed.partition, consumed.offset, consumed.value) not in present:
            anomalies["phantom read"].append(
                f"{history.group}: {consumed.value} at {consumed.partition}/{consumed.offset}"
            )
    where = f"{history.group} ({history.isolation})"
    for session, reads in by_session.items():
        if session < 0:
            anomalies["read outside assignment"] += [f"{where}: {r}" for r in reads]
            continue
        first = reads[0]
        log_offsets = offsets.get(first.partition, [])
        covered = max(
            (o for seq, p, o in history.commits if p == first.partition and seq < first.seq),
            default=0,
        )
        never_read = log_offsets[
            bisect_left(log_offsets, covered) : bisect_left(log_offsets, first.offset)
        ]
        if never_read:
            anomalies["poll skip"].append(
                f"{where}: session {session} started partition {first.partition} at "
                f"{first.offset}, commits covered up to {covered}, skipping {never_read[:5]}"
            )
        for a, b in pairwise(reads):
            if b.offset <= a.offset:
                anomalies["non-monotonic poll"].append(
                    f"{where}: partition {a.partition} offset {b.offset} after {a.offset}"
                )
                continue
            between = log_offsets[
                bisect_right(log_offsets, a.offset) : bisect_left(log_offsets, b.offset)
            ]
            if between:
                anomalies["poll skip"].append(
                    f"{where}: partition {a.partition} {a.offset} -> {b.offset} "
                    f"skipping {between[:5]}"
                )
    return anomalies

"""Kafka 4.4's own ``KafkaShareConsumer`` (KIP-932) against the built-in broker.

``java/ShareMembers.java`` runs the Java client in explicit acknowledgement mode and
prints every delivery (member, offset, delivery count, the acknowledgement it gave).
The broker runs as a process with a delivery limit of 3 and long record locks, so that
only an acknowledgement, never a lock running out, brings a record back; one test has
a broker of its own with 2 s locks, to see records held too long go to another member.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from brokerproc import BrokerProcess, free_port
from confluent_kafka import Producer

from jvm import compile_java, java_command, kafka_tool

pytestmark = pytest.mark.slow(seconds=15)  # six tests of Java share consumers

SOURCE = Path(__file__).parent / "java" / "ShareMembers.java"
DELIVERY_LIMIT = 3
POISON = 5  # the offset ShareMembers releases at every delivery
CONFIG_COMMAND = "org.apache.kafka.tools.ConfigCommand"


def start_broker(root: Path, lock_ms: int) -> BrokerProcess:
    port = free_port()
    config = root / "server.properties"
    config.write_text(
        f"listeners=PLAINTEXT://127.0.0.1:{port}\n"
        f"group.share.record.lock.duration.ms={lock_ms}\n"
        f"group.share.delivery.count.limit={DELIVERY_LIMIT}\n"
        "group.share.heartbeat.interval.ms=500\n"
        "share.auto.offset.reset=earliest\n"
    )
    return BrokerProcess(root / "data", port=port, config=config).start()


@pytest.fixture(scope="module")
def share_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """Locks far longer than any test: only acknowledgements bring records back."""
    broker = start_broker(tmp_path_factory.mktemp("java-share"), lock_ms=30_000)
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="module")
def share_members_cp(tmp_path_factory: pytest.TempPathFactory) -> str:
    return compile_java([SOURCE], tmp_path_factory.mktemp("share-classes"))


@dataclass
class Deliveries:
    """What ShareMembers printed: per offset, each delivery as (member, count, ack)."""

    by_offset: dict[int, list[tuple[str, int, str]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    polling: set[str] = field(default_factory=set)
    polls: list[int] = field(default_factory=list)
    lock_ms: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    done: set[str] = field(default_factory=set)

    def read(self, line: str) -> None:
        word, *rest = line.split(maxsplit=1)
        if word == "d":
            member, offset, count, ack = rest[0].split()
            self.by_offset[int(offset)].append((member, int(count), ack))
        elif word == "poll":
            self.polls.append(int(rest[0].split()[1]))
        elif word == "lock":
            member, ms = rest[0].split()
            self.lock_ms[member] = ms
        elif word == "polling":
            self.polling.add(rest[0])
        elif word == "done":
            self.done.add(rest[0])
        elif word == "e":
            self.errors.append(rest[0])


class Members:
    """ShareMembers as a process, its output read as it comes."""

    def __init__(self, cp: str, *args: str) -> None:
        self.seen = Deliveries()
        self.proc = subprocess.Popen(
            java_command("ShareMembers", *args, cp=cp),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.errors = ""
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.strip():
                self.seen.read(line.strip())

    def wait_polling(self, members: int, within: float = 60) -> None:
        deadline = time.monotonic() + within
        while len(self.seen.polling) < members:
            assert self.proc.poll() is None, self.stderr()
            assert time.monotonic() < deadline, f"members not polling: {self.stderr()}"
            time.sleep(0.1)

    def finish(self, within: float) -> Deliveries:
        try:
            self.proc.wait(within)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        errors = self.stderr()
        assert self.proc.returncode == 0, errors
        return self.seen

    def stderr(self) -> str:
        """The process's error output once it has ended (its pipes closed then)."""
        if self.proc.poll() is None:
            return "(running)"
        assert self.proc.stderr is not None and self.proc.stdout is not None
        if not self.proc.stderr.closed:
            self.errors = self.proc.stderr.read()[-3000:]
            self.proc.stderr.close()
        self.reader.join(5)
        self.proc.stdout.close()
        return self.errors


def produce(bootstrap: str, topic: str, count: int, per_batch: int, pause: float) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(count):
        producer.produce(topic, value=f"v{i}".encode(), partition=0)
        if (i + 1) % per_batch == 0:
            assert producer.flush(10) == 0
            time.sleep(pause)
    assert producer.flush(10) == 0


@pytest.mark.timeout(120)
def test_two_java_members_share_a_partition_and_every_record_is_delivered(
    share_broker: BrokerProcess, share_members_cp: str
) -> None:
    bootstrap, topic, total = share_broker.bootstrap, "java-share-two", 400
    produce(bootstrap, topic, 1, 1, 0)  # the topic exists before anyone subscribes
    members = Members(share_members_cp, bootstrap, topic, "java-two", "share", str(total), "60")
    members.wait_polling(2)
    produce(bootstrap, topic, total - 1, 10, 0.05)
    seen = members.finish(70)

    assert seen.done == {"m0", "m1"} and not seen.errors, seen.errors
    assert sorted(seen.by_offset) == list(range(total))
    by_member = {m: {o for o, ds in seen.by_offset.items() if ds[0][0] == m} for m in seen.done}
    assert all(by_member.values()), (
        f"one member got nothing: {[len(v) for v in by_member.values()]}"
    )
    # accepted once, never handed to the other member too
    twice = {o: ds for o, ds in seen.by_offset.items() if len(ds) != 1}
    assert not twice, twice
    assert {ds[0][1] for ds in seen.by_offset.values()} == {1}


@pytest.mark.timeout(120)
def test_java_acknowledgements_release_reject_and_the_delivery_limit(
    share_broker: BrokerProcess, share_members_cp: str
) -> None:
    bootstrap, topic, total = share_broker.bootstrap, "java-share-acks", 30
    produce(bootstrap, topic, total, total, 0)
    seen = Members(share_members_cp, bootstrap, topic, "java-acks", "acks", str(total), "8").finish(
        60
    )

    assert seen.done == {"m0"} and not seen.errors, seen.errors
    assert sorted(seen.by_offset) == list(range(total))
    counts = {o: [count for _m, count, _ack in ds] for o, ds in seen.by_offset.items()}
    for offset, delivered in counts.items():
        if offset == POISON:
            # released at every delivery: delivered up to the limit, then archived
            assert delivered == list(range(1, DELIVERY_LIMIT + 1)), delivered
        elif offset % 10 == 7:
            # released once, then redelivered with its count raised, and accepted
            assert delivered == [1, 2], (offset, delivered)
            assert [ack for *_x, ack in seen.by_offset[offset]] == ["RELEASE", "ACCEPT"]
        else:
            # accepted or rejected at the first delivery: never again
            assert delivered == [1], (offset, delivered)
    rejected = [o for o, ds in seen.by_offset.items() if ds[0][2] == "REJECT"]
    assert rejected == [3, 13, 23]


@pytest.mark.timeout(120)
def test_java_record_limit_mode_never_hands_out_more_than_max_poll_records(
    share_broker: BrokerProcess, share_members_cp: str
) -> None:
    bootstrap, topic, total = share_broker.bootstrap, "java-share-limit", 100
    produce(bootstrap, topic, total, total, 0)  # one batch of 100
    seen = Members(
        share_members_cp, bootstrap, topic, "java-limit", "limit", str(total), "40"
    ).finish(60)
    assert seen.done == {"m0"} and not seen.errors, seen.errors
    assert sorted(seen.by_offset) == list(range(total))
    assert all(len(ds) == 1 for ds in seen.by_offset.values())
    assert max(seen.polls) == 7 and sum(seen.polls) == total, seen.polls


@pytest.mark.timeout(120)
def test_java_records_held_past_their_lock_go_to_another_member(
    tmp_path: Path, share_members_cp: str
) -> None:
    broker = start_broker(tmp_path, lock_ms=2_000)
    try:
        bootstrap, topic, total = broker.bootstrap, "java-share-expire", 20
        produce(bootstrap, topic, total, total, 0)
        seen = Members(
            share_members_cp, bootstrap, topic, "java-expire", "expire", str(total), "40"
        ).finish(60)
    finally:
        broker.stop()
    assert seen.done == {"m0", "m1"} and not seen.errors, seen.errors
    assert seen.lock_ms == {"m0": "2000"}  # the broker's lock, as the client reports it
    held = {o for o, ds in seen.by_offset.items() if ds[0][2] == "HELD"}
    assert held, seen.by_offset
    assert sorted(seen.by_offset) == list(range(total))
    # m0's client keeps fetching in the background after its one poll, so a record whose
    # lock ran out may first land, unseen, in m0's buffer again (its count raised) and reach
    # m1 only when that lock runs out too: m1's count is 2 or, on a slow machine, more.
    for offset, deliveries in seen.by_offset.items():
        members = [m for m, _c, _ack in deliveries]
        counts = [c for _m, c, _ack in deliveries]
        if offset in held:  # the lock ran out: delivered again, to m1, counted again
            assert members == ["m0", "m1"] and counts[0] == 1 and counts[1] >= 2, deliveries
        else:
            assert members == ["m1"], deliveries


@pytest.mark.timeout(120)
def test_java_renew_keeps_records_past_their_lock_from_another_member(
    tmp_path: Path, share_members_cp: str
) -> None:
    """KIP-1222: m0 acknowledges what it got with RENEW for 6 s (three 2 s locks), then
    ACCEPTs it; m1 polls the same group all the while and must get none of it."""
    broker = start_broker(tmp_path, lock_ms=2_000)
    try:
        bootstrap, topic, total = broker.bootstrap, "java-share-renew", 10
        produce(bootstrap, topic, total, total, 0)
        seen = Members(
            share_members_cp, bootstrap, topic, "java-renew", "renew", str(total), "40"
        ).finish(60)
    finally:
        broker.stop()
    assert seen.done == {"m0", "m1"} and not seen.errors, seen.errors
    assert sorted(seen.by_offset) == list(range(total))
    for offset, deliveries in seen.by_offset.items():
        assert {m for m, _c, _a in deliveries} == {"m0"}, (offset, deliveries)
        assert {c for _m, c, _a in deliveries} == {1}, (offset, deliveries)  # never redelivered
        acks = [a for *_x, a in deliveries]
        assert acks[-1] == "ACCEPT" and set(acks[:-1]) == {"RENEW"}, (offset, acks)
        assert len(acks) >= 4, (offset, acks)  # renewed across more than one lock


@pytest.mark.timeout(120)
def test_java_renew_refused_when_the_group_turns_it_off(
    tmp_path: Path, share_members_cp: str
) -> None:
    """``share.renew.acknowledge.enable=false`` on the group, set with Kafka's own
    kafka-configs: a RENEW is refused with INVALID_RECORD_STATE, as Apache Kafka refuses
    it, and the client reports InvalidRecordStateException."""
    broker = start_broker(tmp_path, lock_ms=2_000)
    try:
        bootstrap, topic, group = broker.bootstrap, "java-share-no-renew", "java-no-renew"
        produce(bootstrap, topic, 10, 10, 0)
        kafka_tool(
            CONFIG_COMMAND,
            bootstrap,
            "--alter",
            "--entity-type",
            "groups",
            "--entity-name",
            group,
            "--add-config",
            "share.renew.acknowledge.enable=false",
        )
        seen = Members(share_members_cp, bootstrap, topic, group, "renew", "10", "40").finish(60)
    finally:
        broker.stop()
    assert seen.done == {"m0", "m1"}
    assert seen.errors and all("InvalidRecordStateException" in e for e in seen.errors), seen.errors
    assert all(ds[0][2] == "RENEW" for ds in seen.by_offset.values())

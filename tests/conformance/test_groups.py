"""Consumer groups with aiokafka, kafka-python and confluent-kafka, unchanged.

Every member runs in its own process (``group_member.py``) so that one can be killed
without leaving; the test watches what each reports: assignments and records.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from brokerproc import BrokerProcess
from kafka_clients import ALL_CLIENTS, unique
from kio.schema.types import GroupId

pytestmark = pytest.mark.conformance

MEMBER = Path(__file__).with_name("group_member.py")
PARTITIONS = 6


class Member:
    """A member process and what it reported so far."""

    def __init__(
        self,
        client: str,
        bootstrap: str,
        topic: str,
        group: str,
        name: str,
        log_dir: Path,
        *,
        session_ms: int = 10_000,
        instance: str | None = None,
    ) -> None:
        self.name = name
        args = [
            sys.executable,
            str(MEMBER),
            client,
            bootstrap,
            topic,
            group,
            name,
            "--session-ms",
            str(session_ms),
        ]
        if instance:
            args += ["--instance-id", instance]
        self._stderr_path = log_dir / f"{name}.stderr"
        with open(self._stderr_path, "w") as stderr:
            self.proc = subprocess.Popen(
                args,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        self._lock = threading.Lock()
        self.assignments: list[tuple[float, frozenset[int]]] = []
        self.records: list[tuple[int, int, str]] = []
        self.closed = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            event = json.loads(line)
            with self._lock:
                if event["e"] == "assigned":
                    self.assignments.append((time.monotonic(), frozenset(event["p"])))
                elif event["e"] == "records":
                    self.records += [tuple(r) for r in event["r"]]
                elif event["e"] == "closed":
                    self.closed = True

    @property
    def assigned(self) -> frozenset[int]:
        with self._lock:
            return self.assignments[-1][1] if self.assignments else frozenset()

    def values(self) -> list[str]:
        with self._lock:
            return [v for _, _, v in self.records]

    def stop(self) -> None:
        """SIGTERM: the member closes its consumer, which leaves the group."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)
        self._reader.join(5)
        assert self.closed, f"{self.name} did not close cleanly: {self.stderr()}"

    def kill(self) -> None:
        """SIGKILL: gone without a word to the broker."""
        self.proc.kill()
        self.proc.wait(10)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.kill()
        self._reader.join(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def stderr(self) -> str:
        return self._stderr_path.read_text()[-2000:]


def wait_until(
    condition: Callable[[], bool], timeout: float, what: str, members: list[Member]
) -> float:
    started = time.monotonic()
    while not condition():
        for m in members:
            if m.proc.poll() is not None and not m.closed:
                raise AssertionError(f"{m.name} died: {m.stderr()}")
        if time.monotonic() - started > timeout:
            state = {m.name: sorted(m.assigned) for m in members}
            raise AssertionError(f"timed out waiting for {what}; assignments {state}")
        time.sleep(0.05)
    return time.monotonic() - started


def split_exactly(members: list[Member], partitions: int = PARTITIONS) -> bool:
    """Every partition owned by exactly one member, and every member owns some."""
    owned = [m.assigned for m in members]
    return (
        all(owned)
        and sum(len(o) for o in owned) == partitions
        and frozenset().union(*owned) == frozenset(range(partitions))
    )


@pytest.fixture(params=ALL_CLIENTS, ids=lambda c: c.name)
def client(request: pytest.FixtureRequest) -> Any:
    return request.param()


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Callable[..., Member]]:
    started: list[Member] = []

    def start(*args: Any, **kwargs: Any) -> Member:
        member = Member(*args, **{**kwargs, "log_dir": tmp_path})
        started.append(member)
        return member

    yield start
    for member in started:
        member.close()


def _produce(client: Any, bootstrap: str, topic: str, start: int, count: int) -> None:
    client.produce(
        bootstrap,
        topic,
        [(f"k{i}".encode(), f"v{i}".encode()) for i in range(start, start + count)],
    )


def test_partitions_split_and_rebalance_on_join_and_leave(
    client: Any, broker_process: BrokerProcess, spawn: Callable[..., Member]
) -> None:
    bs = broker_process.bootstrap
    topic, group = unique("split"), unique("g")
    client.create_topic(bs, topic, PARTITIONS)
    _produce(client, bs, topic, 0, 120)
    members = [spawn(client.name, bs, topic, group, "m1")]
    wait_until(lambda: split_exactly(members), 30, "one member owning all", members)
    for name in ("m2", "m3"):  # each join rebalances without overlap
        members.append(spawn(client.name, bs, topic, group, name))
        wait_until(lambda: split_exactly(members), 30, f"a split after {name} joined", members)
    leaving = members.pop(1)
    leaving.stop()
    # A member that leaves is replaced at once, long before its 10 s session would end.
    took = wait_until(lambda: split_exactly(members), 30, "a split after m2 left", members)
    assert took < 6, f"rebalance after LeaveGroup took {took:.1f}s"
    wait_until(
        lambda: len({v for m in [*members, leaving] for v in m.values()}) == 120,
        30,
        "every record consumed",
        members,
    )


@pytest.mark.slow
def test_member_killed_without_leaving_expires_after_its_session(
    client: Any, broker_process: BrokerProcess, spawn: Callable[..., Member]
) -> None:
    bs = broker_process.bootstrap
    topic, group = unique("kill"), unique("g")
    client.create_topic(bs, topic, PARTITIONS)
    members = [spawn(client.name, bs, topic, group, f"m{i}", session_ms=6000) for i in (1, 2)]
    wait_until(lambda: split_exactly(members), 40, "two members splitting", members)
    victim, survivor = members
    victim.kill()
    took = wait_until(lambda: split_exactly([survivor]), 30, "the survivor owning all", [survivor])
    # Nothing told the broker: only the 6 s session timeout can have freed the partitions.
    assert 4.5 < took < 15, f"took {took:.1f}s"
    _produce(client, bs, topic, 0, 60)
    wait_until(lambda: len(set(survivor.values())) == 60, 30, "the survivor consuming", [survivor])


def test_commit_resume_and_fresh_member_after_everyone_left(
    client: Any, broker_process: BrokerProcess, spawn: Callable[..., Member]
) -> None:
    bs = broker_process.bootstrap
    topic, group = unique("resume"), unique("g")
    client.create_topic(bs, topic, PARTITIONS)
    _produce(client, bs, topic, 0, 300)
    members = [spawn(client.name, bs, topic, group, f"m{i}") for i in (1, 2)]
    wait_until(
        lambda: split_exactly(members) and len({v for m in members for v in m.values()}) == 300,
        40,
        "two members consuming everything",
        members,
    )
    for m in members:
        m.stop()
    _produce(client, bs, topic, 300, 200)
    fresh = spawn(client.name, bs, topic, group, "fresh")
    # A group that emptied out takes a new member as its leader.
    wait_until(
        lambda: split_exactly([fresh]) and len(fresh.values()) >= 200,
        30,
        "the fresh member consuming",
        [fresh],
    )
    time.sleep(1)  # anything replayed would arrive now
    assert sorted(fresh.values()) == sorted(f"v{i}" for i in range(300, 500))
    fresh.stop()


def _describe(bootstrap: str, group: str) -> tuple[str, dict[str, str]]:
    """(state, {member id: client id}) straight from DescribeGroups."""
    from kio.schema.describe_groups.v4.request import DescribeGroupsRequest
    from rawkafka import RawClient

    raw = RawClient(bootstrap)
    try:
        response = raw.request(
            15,
            4,
            DescribeGroupsRequest(groups=(GroupId(group),), include_authorized_operations=False),
        )
    finally:
        raw.close()
    [described] = response.groups
    return described.group_state, {m.member_id: m.client_id for m in described.members}


def _committed(bootstrap: str, group: str) -> dict[int, int]:
    from kio.schema.offset_fetch.v5.request import OffsetFetchRequest
    from rawkafka import RawClient

    raw = RawClient(bootstrap)
    try:
        response = raw.request(9, 5, OffsetFetchRequest(group_id=GroupId(group), topics=None))
    finally:
        raw.close()
    return {p.partition_index: p.committed_offset for t in response.topics for p in t.partitions}


def test_group_and_offsets_survive_a_broker_restart(
    client: Any, tmp_path: Path, spawn: Callable[..., Member]
) -> None:
    with BrokerProcess(tmp_path / "data") as broker:
        bs = broker.bootstrap
        topic, group = unique("restart"), unique("g")
        client.create_topic(bs, topic, PARTITIONS)
        _produce(client, bs, topic, 0, 100)
        members = [spawn(client.name, bs, topic, group, f"m{i}", session_ms=30_000) for i in (1, 2)]
        wait_until(
            lambda: split_exactly(members) and len({v for m in members for v in m.values()}) == 100,
            40,
            "a split with everything consumed",
            members,
        )
        before = [m.assigned for m in members]
        rebalances = [len(m.assignments) for m in members]
        state, member_ids = _describe(bs, group)
        assert state == "Stable" and sorted(member_ids.values()) == ["m1", "m2"]
        assert broker.stop() == 0, broker.log()
        broker.start()
        _produce(client, bs, topic, 100, 100)
        wait_until(
            lambda: len({v for m in members for v in m.values()}) == 200,
            40,
            "the new records consumed after the restart",
            members,
        )
        time.sleep(1)
        # Restored from __consumer_offsets: same members, same assignment, committed
        # positions kept, so nothing before the restart is read again.
        assert [m.assigned for m in members] == before
        assert [len(m.assignments) for m in members] == rebalances
        # A member the broker had forgotten would have rejoined under a new member id.
        assert _describe(bs, group) == ("Stable", member_ids)
        seen = [v for m in members for v in m.values()]
        assert sorted(seen) == sorted(f"v{i}" for i in range(200))
        for m in members:
            m.stop()
        assert sum(_committed(bs, group).values()) == 200


def test_static_member_restart_causes_no_rebalance(
    client: Any, broker_process: BrokerProcess, spawn: Callable[..., Member]
) -> None:
    bs = broker_process.bootstrap
    topic, group = unique("static"), unique("g")
    client.create_topic(bs, topic, PARTITIONS)
    members = [
        spawn(client.name, bs, topic, group, f"m{i}", session_ms=30_000, instance=f"instance-{i}")
        for i in (1, 2)
    ]
    wait_until(lambda: split_exactly(members), 40, "two static members splitting", members)
    steady, restarting = members
    kept, owned = steady.assigned, restarting.assigned
    changes = len(steady.assignments)
    restarting.kill()  # a crash and restart: no LeaveGroup, back well within the session
    again = spawn(
        client.name, bs, topic, group, "m2-again", session_ms=30_000, instance="instance-2"
    )
    wait_until(
        lambda: again.assigned == owned,
        20,
        "the restarted member's old partitions",
        [steady, again],
    )
    _produce(client, bs, topic, 0, 60)
    wait_until(
        lambda: len({v for m in (steady, again) for v in m.values()}) == 60,
        30,
        "records flowing to both",
        [steady, again],
    )
    assert steady.assigned == kept and len(steady.assignments) == changes
    state, member_ids = _describe(bs, group)
    assert state == "Stable" and sorted(member_ids.values()) == ["m1", "m2-again"]

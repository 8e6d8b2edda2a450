"""Members of consumer-protocol groups (KIP-848) as processes, and the checks made on
what they report: each prints JSON lines (``assign``/``revoke``/``lost`` with wall
times, ``rec`` per record, ``error``), whatever client it runs.
"""

from __future__ import annotations

import itertools
import json
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kio.schema.consumer_group_describe.v0.request import ConsumerGroupDescribeRequest
from kio.schema.types import GroupId
from rawkafka import RawClient


class Member:
    """A member process and what it reported so far."""

    def __init__(self, name: str, args: Sequence[str], log_dir: Path) -> None:
        self.name = name
        self._stderr_path = log_dir / f"{name}.stderr"
        with open(self._stderr_path, "w") as stderr:
            self.proc = subprocess.Popen(
                list(args),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        self._lock = threading.Lock()
        self.events: list[dict[str, Any]] = []
        self.owned: set[int] = set()
        self.records: set[tuple[int, int]] = set()
        # (wall time, partition) of each record consumed, in order.
        self.consume_times: list[tuple[float, int]] = []
        self.member_id = ""
        self.killed_at: float | None = None
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if not line.startswith("{"):
                continue
            event = json.loads(line)
            with self._lock:
                kind = event["e"]
                if kind == "rec":
                    self.records.add((event["p"], event["o"]))
                    self.consume_times.append((event.get("t", 0.0), event["p"]))
                    continue
                self.events.append(event)
                if kind == "assign":
                    self.owned |= set(event["p"])
                elif kind in ("revoke", "lost"):
                    self.owned -= set(event["p"])
                elif kind == "member":
                    self.member_id = event["id"]

    def assigned(self) -> frozenset[int]:
        with self._lock:
            return frozenset(self.owned)

    def errors(self) -> list[str]:
        """Each error's name and text, as the client gave them."""
        with self._lock:
            return [f"{e['name']}: {e.get('s', '')}" for e in self.events if e["e"] == "error"]

    def consumed(self) -> set[tuple[int, int]]:
        with self._lock:
            return set(self.records)

    def leave(self) -> None:
        """Close the consumer, which leaves the group (epoch -1)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("leave\n")
        self.proc.stdin.flush()
        self.proc.wait(30)
        self._reader.join(5)
        with self._lock:
            assert any(e["e"] == "closed" for e in self.events), self.stderr()

    def kill(self) -> None:
        self.killed_at = time.time()
        self.proc.kill()
        self.proc.wait(10)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self._reader.join(5)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()

    def stderr(self) -> str:
        return self._stderr_path.read_text()[-3000:]

    def logged(self, text: str) -> bool:
        return text in self._stderr_path.read_text()

    def intervals(self, end: float) -> list[tuple[int, float, float]]:
        """(partition, from, to) of each stretch this member owned a partition."""
        started: dict[int, float] = {}
        found = []
        with self._lock:
            events = list(self.events)
        for event in events:
            if event["e"] == "assign":
                for p in event["p"]:
                    started[p] = event["t"]
            elif event["e"] in ("revoke", "lost"):
                for p in event["p"]:
                    if p in started:
                        found.append((p, started.pop(p), event["t"]))
        last = self.killed_at if self.killed_at is not None else end
        found += [(p, t, last) for p, t in started.items()]
        return found


def wait_until(
    condition: Callable[[], bool], timeout: float, what: str, members: list[Member]
) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        for m in members:
            if m.proc.poll() is not None and m.killed_at is None and m.proc.returncode != 0:
                raise AssertionError(f"{m.name} died: {m.stderr()}")
        if time.monotonic() > deadline:
            state = {m.name: sorted(m.assigned()) for m in members}
            raise AssertionError(f"timed out waiting for {what}; owned {state}")
        time.sleep(0.05)


def owned_exactly(members: Sequence[Member], partitions: int) -> bool:
    """Every partition owned by exactly one of ``members``, each owning some."""
    owned = [m.assigned() for m in members]
    flat = [p for o in owned for p in o]
    return all(owned) and sorted(flat) == list(range(partitions))


def assert_never_owned_twice(members: Sequence[Member]) -> None:
    """No partition was held by two members at once, by the members' own callbacks."""
    end = time.time()
    by_partition: dict[int, list[tuple[float, float, str]]] = {}
    for m in members:
        for p, start, stop in m.intervals(end):
            by_partition.setdefault(p, []).append((start, stop, m.name))
    for p, spans in by_partition.items():
        spans.sort()
        for (_s1, e1, n1), (s2, _e2, n2) in itertools.pairwise(spans):
            assert n1 == n2 or s2 >= e1, f"partition {p}: {n1} until {e1}, {n2} from {s2}"


class DescribeWatcher:
    """Polls ConsumerGroupDescribe and checks, at each epoch the broker reports, that
    no partition is in two members' current assignments."""

    def __init__(self, bootstrap: str, group: str) -> None:
        self._client = RawClient(bootstrap)
        # The watcher's thread and the test both describe: one request at a time on the
        # shared connection, or one reads the other's answer.
        self._lock = threading.Lock()
        self._group = group
        self._stop = threading.Event()
        self.snapshots = 0
        self.epochs: set[int] = set()
        self.violations: list[str] = []
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def describe(self) -> Any:
        request = ConsumerGroupDescribeRequest(
            group_ids=(GroupId(self._group),), include_authorized_operations=False
        )
        with self._lock:
            return self._client.request(69, 0, request).groups[0]

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            group = self.describe()
            if group.error_code != 0:
                continue
            self.snapshots += 1
            self.epochs.add(group.group_epoch)
            seen: dict[tuple[Any, int], str] = {}
            for member in group.members:
                for tp in member.assignment.topic_partitions:
                    for p in tp.partitions:
                        key = (tp.topic_id, p)
                        if key in seen:
                            self.violations.append(
                                f"epoch {group.group_epoch}: {key} in {seen[key]} and "
                                f"{member.member_id}"
                            )
                        seen[key] = member.member_id

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._client.close()

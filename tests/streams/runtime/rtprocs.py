"""Processes the runtime tests start: brokers and application instances."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
APPS = Path(__file__).with_name("runtime_apps.py")

Record = tuple[bytes | None, bytes | None] | tuple[bytes | None, bytes | None, int | None]
"""A record to produce: (key, value) or (key, value, timestamp ms or ``None``)."""


@dataclass(frozen=True)
class Cluster:
    """The broker a test runs against: ``builtin`` (headrace's own) or ``tansu``."""

    kind: str
    bootstrap: str


class Instance:
    """One application instance as its own ``headrace run`` process; ``target`` names a
    function in ``runtime_apps.py``, or any ``module:name`` or ``path.py:name``."""

    def __init__(
        self,
        target: str,
        app_id: str,
        bootstrap: str,
        state_dir: Path,
        name: str,
        env: dict[str, str] | None = None,
        commit_interval_ms: int | None = 200,
    ) -> None:
        self.log_path = state_dir.parent / f"{name}.log"
        self.state_dir = state_dir
        self.env = env or {}
        self.args = [
            sys.executable,
            "-m",
            "headrace",
            "run",
            target if ":" in target else f"{APPS}:{target}",
            "--application-id",
            app_id,
            "--bootstrap-servers",
            bootstrap,
            "--state-dir",
            str(state_dir),
            "--status-interval",
            "0.5",
            "--http-port",
            "0",
        ]
        if commit_interval_ms is not None:
            self.args += ["--commit-interval-ms", str(commit_interval_ms)]
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Instance:
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child
        env = {
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "HEADRACE_SESSION_TIMEOUT_MS": "6000",
            "HEADRACE_HEARTBEAT_INTERVAL_MS": "500",
            "PYTHONPATH": str(ROOT),
            **self.env,
        }
        self.proc = subprocess.Popen(self.args, stdout=log, stderr=log, env=env, cwd=ROOT)
        log.close()
        return self

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""

    def wait_for(self, text: str, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.log():
                return
            if self.proc is not None and self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(f"{text!r} not seen in time:\n{self.log()[-3000:]}")

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> int:
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(30)


async def create_topics(bootstrap: str, *topics: str, partitions: int = 2) -> None:
    """Create ``topics`` that do not exist yet: applications never create the topics they
    read or write, so a test creates them first (a module's tests may share a broker)."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        await admin.create_topics([NewTopic(t, partitions, 1) for t in topics if t not in existing])
    finally:
        await admin.close()


async def produce(
    bootstrap: str, topic: str, records: Iterable[Record], *, linger_ms: int = 0
) -> None:
    """Send ``records`` to ``topic`` with a real client (aiokafka), all acknowledged."""
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=linger_ms)
    await producer.start()
    try:
        for key, value, *timestamp in records:
            await producer.send(
                topic, value, key=key, timestamp_ms=timestamp[0] if timestamp else None
            )
        await producer.flush()
    finally:
        await producer.stop()


async def read_until(
    bootstrap: str,
    topic: str,
    done: Callable[[list[tuple[bytes, bytes]]], bool],
    wait: float = 60,
) -> list[tuple[bytes, bytes]]:
    """The (key, value) pairs of ``topic``, read from the beginning with a real client
    (aiokafka) until ``done`` says they are all there or ``wait`` seconds have passed."""
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    await consumer.start()
    got: list[tuple[bytes, bytes]] = []
    deadline = time.monotonic() + wait
    try:
        while time.monotonic() < deadline and not done(got):
            for records in (await consumer.getmany(timeout_ms=300)).values():
                got.extend((r.key, r.value) for r in records)
    finally:
        await consumer.stop()
    return got


async def until_committed(
    bootstrap: str, group: str, topic: str, records: int, wait: float = 40
) -> None:
    """Wait until ``group``'s committed offsets on ``topic`` add up to ``records``."""
    from aiokafka.admin import AIOKafkaAdminClient

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        deadline = time.monotonic() + wait
        while True:
            offsets = await admin.list_consumer_group_offsets(group)
            committed = sum(meta.offset for tp, meta in offsets.items() if tp.topic == topic)
            if committed >= records:
                return
            assert time.monotonic() < deadline, (
                f"{group} committed {committed} of {records} of {topic}"
            )
            await asyncio.sleep(0.1)
    finally:
        await admin.close()

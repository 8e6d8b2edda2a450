"""A Kafka Streams 4.4 application under exactly_once_v2 against the built-in broker
(``headrace broker`` as a subprocess): two instances re-key records (a repartition
topic) and count them into a store (a changelog topic); a read_committed consumer
checks every count against the input. Then the same application with
``group.protocol=streams`` (KIP-1071), which the broker does not offer: it must fail at
once and say why."""

from __future__ import annotations

import subprocess
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import confluent_kafka as ck
import pytest
from brokerproc import BrokerProcess
from confluent_kafka.admin import AdminClient, NewTopic

from jvm import compile_java, java_command

APP = Path(__file__).parent / "apps" / "EosWordCount.java"
PARTITIONS = 4
WORDS = ["alder", "birch", "cedar", "hazel", "larch", "maple", "rowan", "willow"]


@pytest.fixture(scope="module")
def app_classpath(tmp_path_factory: pytest.TempPathFactory) -> str:
    return compile_java([APP], tmp_path_factory.mktemp("streams-classes"))


class StreamsApp:
    """The application's JVM: output to a file, stopped by closing its standard input."""

    def __init__(self, cp: str, bootstrap: str, workdir: Path, protocol: str) -> None:
        self.app_id = f"eos-words-{uuid.uuid4().hex[:8]}"
        self.input, self.output = f"{self.app_id}-in", f"{self.app_id}-out"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for done in admin.create_topics(
            [NewTopic(t, PARTITIONS, 1) for t in (self.input, self.output)]
        ).values():
            done.result(15)
        self.log_path = workdir / f"{self.app_id}.log"
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                java_command(
                    "EosWordCount",
                    bootstrap,
                    self.app_id,
                    self.input,
                    self.output,
                    str(workdir / "state"),
                    protocol,
                    cp=cp,
                    heap="512m",
                ),
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for(self, line: str, timeout: float) -> bool:
        """Until the app prints ``line`` (True) or exits (False)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(got.startswith(line) for got in self.log().splitlines()):
                return True
            if self.proc.poll() is not None:
                return False
            time.sleep(0.2)
        raise TimeoutError(f"no {line!r} from the app within {timeout}s:\n{self.log()[-3000:]}")

    def close(self) -> int:
        assert self.proc.stdin is not None
        running = self.proc.poll() is None
        self.proc.stdin.close()  # the app's signal to close its instances
        if running:
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode


@pytest.fixture
def start_app(
    app_classpath: str, broker_process: BrokerProcess, tmp_path: Path
) -> Iterator[list[StreamsApp]]:
    started: list[StreamsApp] = []
    yield started
    for app in started:
        app.close()


def produce_words(bootstrap: str, topic: str, count: int) -> Counter[str]:
    """``count`` records keyed by user, each a word; how often each word was sent."""
    producer = ck.Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    sent: Counter[str] = Counter()
    for i in range(count):
        word = WORDS[(i * 7 + i // 5) % len(WORDS)]
        producer.produce(topic, key=f"user-{i % 37}".encode(), value=word.encode())
        sent[word] += 1
    assert producer.flush(30) == 0
    return sent


def read_counts(
    bootstrap: str, topic: str, expected: Counter[str], timeout: float
) -> dict[str, list[int]]:
    """Every count the app wrote per word (read_committed), until each word's last
    count is the expected one or ``timeout`` passes."""
    consumer = ck.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4().hex[:8]}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    seen: dict[str, list[int]] = {}
    try:
        consumer.assign(
            [ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in range(PARTITIONS)]
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if {w: counts[-1] for w, counts in seen.items()} == dict(expected):
                break
            msg = consumer.poll(0.5)
            if msg is None or msg.error() is not None:
                continue
            key, value = msg.key(), msg.value()
            assert key is not None and value is not None
            seen.setdefault(key.decode(), []).append(int.from_bytes(value, "big", signed=True))
    finally:
        consumer.close()
    return seen


def test_exactly_once_counts_with_two_instances_and_the_classic_protocol(
    start_app: list[StreamsApp], app_classpath: str, broker_process: BrokerProcess, tmp_path: Path
) -> None:
    bootstrap = broker_process.bootstrap
    app = StreamsApp(app_classpath, bootstrap, tmp_path, "classic")
    start_app.append(app)
    assert app.wait_for("RUNNING", 60), app.log()[-3000:]
    [running] = [line for line in app.log().splitlines() if line.startswith("RUNNING")]
    tasks = [int(n) for n in running.split()[1:]]
    assert len(tasks) == 2 and min(tasks) >= 1, running  # both instances process
    sent = produce_words(bootstrap, app.input, 400)
    seen = read_counts(bootstrap, app.output, sent, timeout=45)
    # caching off: each word's counts are 1, 2, ... n exactly once, n what was sent
    assert seen == {w: list(range(1, n + 1)) for w, n in sent.items()}, app.log()[-3000:]
    assert app.close() == 0, app.log()[-3000:]
    assert "CLOSED" in app.log()


def test_streams_group_protocol_fails_clearly_without_streams_group_heartbeat(
    start_app: list[StreamsApp], app_classpath: str, broker_process: BrokerProcess, tmp_path: Path
) -> None:
    app = StreamsApp(app_classpath, broker_process.bootstrap, tmp_path, "streams")
    start_app.append(app)
    assert not app.wait_for("RUNNING", 60), "the app ran without StreamsGroupHeartbeat"
    assert app.proc.wait(30) == 2, app.log()[-3000:]
    # what each instance's uncaught exception handler is given, as Kafka Streams 4.4
    # words it when the broker answers ApiVersions without StreamsGroupHeartbeat (88)
    failed = [line for line in app.log().splitlines() if line.startswith("FAILED")]
    assert failed, app.log()[-3000:]
    assert all(
        "UnsupportedVersionException: The cluster does not support the STREAMS group protocol"
        in line
        for line in failed
    ), failed

"""Apache Kafka 4.4 in KRaft mode on loopback, from the jars of jvm/pom.xml: one node,
or three combined broker+controller nodes with a static quorum
(``controller.quorum.voters``), for tests and benchmarks that compare with or need the
real thing.

Starting a cluster, in order:

1. every node gets two free ports (client, controller) and a data dir of its own, whose
   ``server.properties`` names all voters;
2. each data dir is formatted with Kafka's storage tool (one JVM per node, in parallel);
3. each node's ``kafka.Kafka`` starts with ``-Xmx512m``, its output to ``server.log`` in
   its data dir;
4. the cluster is ready when a Metadata request to each node lists every node (brokers
   answer Metadata only once registered and caught up with the metadata log).

Nodes are stopped by pid: SIGTERM then SIGKILL after a grace period, or SIGKILL at once
(:meth:`KafkaNode.kill`). A failure quotes the end of the node's log.
"""

from __future__ import annotations

import base64
import contextlib
import json
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import confluent_kafka as ck
import pytest
from brokerproc import free_port
from confluent_kafka import ElectionType
from confluent_kafka.admin import AdminClient
from processes import StartStop, log_tail, terminate

from jvm import KAFKA_SERVER, STORAGE_TOOL, java_command, kafka_tool

HEAP = "512m"

_SERVER_LOGGING = ("-Dorg.slf4j.simpleLogger.defaultLogLevel=info",)
"""The server logs at info into its data dir: what a failure message quotes."""


def _new_cluster_id() -> str:
    """A cluster id as Kafka's ``Uuid.randomUuid().toString()``: 16 bytes, base64url."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class KafkaNode:
    """One combined broker+controller process."""

    def __init__(self, node_id: int, data_dir: Path) -> None:
        self.node_id = node_id
        self.data_dir = data_dir
        self.port = free_port()
        self.controller_port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def voter(self) -> str:
        return f"{self.node_id}@127.0.0.1:{self.controller_port}"

    @property
    def config_path(self) -> Path:
        return self.data_dir / "server.properties"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "server.log"

    def write_config(self, voters: str, replication: int, extra: dict[str, str]) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        settings = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://{self.bootstrap},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{self.bootstrap}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.data_dir / "log"),
            "num.partitions": "1",
            "default.replication.factor": str(replication),
            "offsets.topic.replication.factor": str(replication),
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.replication.factor": str(replication),
            "transaction.state.log.min.isr": str(min(2, replication)),
            "transaction.state.log.num.partitions": "3",
            "share.coordinator.state.topic.replication.factor": str(replication),
            "share.coordinator.state.topic.min.isr": str(min(2, replication)),
            "group.initial.rebalance.delay.ms": "0",
            # a killed node is fenced, and its partitions led elsewhere, within seconds
            # rather than the default 9 s
            "broker.session.timeout.ms": "2500",
            "broker.heartbeat.interval.ms": "500",
            "num.network.threads": "2",
            "num.io.threads": "2",
            "num.recovery.threads.per.data.dir": "1",
            "background.threads": "2",
            **extra,
        }
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))

    def format_command(self, cluster_id: str) -> list[str]:
        return java_command(
            STORAGE_TOOL, "format", "-t", cluster_id, "-c", str(self.config_path), heap="256m"
        )

    def start(self) -> None:
        assert self.proc is None or self.proc.poll() is not None, "node already running"
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                java_command(
                    KAFKA_SERVER,
                    str(self.config_path),
                    heap=HEAP,
                    jvm_options=_SERVER_LOGGING,
                ),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.data_dir,
            )

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs."""
        if self.running:
            assert self.proc is not None
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self, grace: float = 15.0) -> None:
        """SIGTERM (a controlled shutdown), then SIGKILL after ``grace`` seconds."""
        if self.proc is not None:
            terminate([self.proc], grace)

    def log(self, chars: int = 4000) -> str:
        return log_tail(self.log_path, chars)

    def brokers_seen(self) -> set[int]:
        """The broker ids this node's Metadata answer lists; empty while it does not
        answer."""
        from kio.schema.metadata.v12.request import MetadataRequest
        from rawkafka import RawClient

        try:
            with RawClient(self.bootstrap, timeout=2) as client:
                answer = client.request(
                    3,
                    12,
                    MetadataRequest(
                        topics=(),
                        allow_auto_topic_creation=False,
                        include_topic_authorized_operations=False,
                    ),
                )
        except (OSError, ConnectionError):
            return set()
        return {int(b.node_id) for b in answer.brokers}


class KafkaCluster(StartStop):
    """``size`` KRaft nodes (1 or 3), each broker and controller, all voters."""

    def __init__(self, root: Path, size: int = 1, config: dict[str, str] | None = None) -> None:
        assert size >= 1
        self.root = root
        self.cluster_id = _new_cluster_id()
        self.nodes = [KafkaNode(i + 1, root / f"node-{i + 1}") for i in range(size)]
        self.replication = min(size, 3)
        self.extra = dict(config or {})

    @property
    def bootstrap(self) -> str:
        return ",".join(node.bootstrap for node in self.nodes)

    def node(self, node_id: int) -> KafkaNode:
        return next(node for node in self.nodes if node.node_id == node_id)

    def start(self, timeout: float = 150.0) -> KafkaCluster:
        voters = ",".join(node.voter for node in self.nodes)
        for node in self.nodes:
            node.write_config(voters, self.replication, self.extra)
        self._format()
        for node in self.nodes:
            node.start()
        try:
            self.wait_ready(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _format(self) -> None:
        formats = [
            (
                node,
                subprocess.Popen(
                    node.format_command(self.cluster_id),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                ),
            )
            for node in self.nodes
        ]
        for node, proc in formats:
            out, _ = proc.communicate(timeout=120)
            assert proc.returncode == 0, (
                f"formatting node {node.node_id} failed:\n{out.decode()[-3000:]}"
            )

    def wait_ready(self, timeout: float = 150.0) -> None:
        """Until every running node's Metadata answer lists every running node."""
        wanted = {node.node_id for node in self.nodes if node.running}
        self.wait_until(
            lambda: all(node.brokers_seen() >= wanted for node in self.nodes if node.running),
            timeout,
            "the cluster's metadata to list every node",
        )

    def wait_until(self, condition: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            for node in self.nodes:
                if (
                    node.proc is not None
                    and not node.running
                    and node.proc.returncode != -signal.SIGKILL
                ):
                    raise RuntimeError(
                        f"Kafka node {node.node_id} exited with {node.proc.returncode}:\n{node.log()}"
                    )
            if time.monotonic() > deadline:
                logs = "\n".join(f"--- node {n.node_id}:\n{n.log(2000)}" for n in self.nodes)
                raise TimeoutError(f"waited {timeout}s for {what}\n{logs}")
            time.sleep(0.2)

    def restart(self, node_id: int, timeout: float = 150.0) -> None:
        """Start a stopped or killed node again and wait until the cluster lists it."""
        self.node(node_id).start()
        self.wait_ready(timeout)

    def stop(self, grace: float = 15.0) -> None:
        """Stop every node: all get SIGTERM at once (a broker's controlled shutdown needs
        the controllers' quorum, so stopping them one by one would stall the last), then
        SIGKILL after ``grace`` seconds. ``grace=0`` kills at once: for data dirs that
        are thrown away."""
        if grace > 0:
            terminate([node.proc for node in self.nodes if node.proc is not None], grace)
        else:
            for node in self.nodes:
                node.kill()


_RUNNING: dict[str, KafkaCluster] = {}
"""The session's clusters by fixture name, while they run."""


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Stop a session's cluster once no test left to run uses it: its JVMs hold half a
    GiB each, and must not idle through the rest of the suite."""
    if not _RUNNING:
        return
    items = item.session.items
    later = items[items.index(item) + 1 :] if nextitem is not None else []
    for name, cluster in list(_RUNNING.items()):
        if not any(name in getattr(i, "fixturenames", ()) for i in later):
            del _RUNNING[name]
            cluster.stop(grace=0)


def _session_cluster(name: str, size: int, tmp: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    cluster = KafkaCluster(tmp.mktemp(name), size=size).start()
    _RUNNING[name] = cluster
    try:
        yield cluster
    finally:
        _RUNNING.pop(name, None)
        cluster.stop(grace=0)


def _running(name: str, cluster: KafkaCluster) -> KafkaCluster:
    """The session's cluster, started again if :func:`pytest_runtest_teardown` stopped it.

    That hook reads "no test left uses it" from the collection order; under pytest-xdist's
    ``--dist loadfile`` a worker runs modules in an order of its own, so a module that comes
    later on the worker can find its cluster stopped, and must not fail for it.
    """
    if not all(node.running for node in cluster.nodes):
        for node in cluster.nodes:
            if not node.running:
                node.start()
        cluster.wait_ready()
        wait_healthy(cluster)
    _RUNNING[name] = cluster
    return cluster


@pytest.fixture(scope="session")
def _kafka_cluster_3_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    yield from _session_cluster("kafka_cluster_3", 3, tmp_path_factory)


@pytest.fixture(scope="session")
def _kafka_cluster_1_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KafkaCluster]:
    yield from _session_cluster("kafka_cluster_1", 1, tmp_path_factory)


@pytest.fixture
def kafka_cluster_3(_kafka_cluster_3_session: KafkaCluster) -> KafkaCluster:
    """Three Apache Kafka 4.4 nodes (broker+controller each), shared by the whole session:
    a test that stops or kills a node must start it again and wait for
    :func:`wait_healthy` before it returns."""
    return _running("kafka_cluster_3", _kafka_cluster_3_session)


@pytest.fixture
def kafka_cluster_1(_kafka_cluster_1_session: KafkaCluster) -> KafkaCluster:
    """One Apache Kafka 4.4 node, shared by the whole session."""
    return _running("kafka_cluster_1", _kafka_cluster_1_session)


REASSIGN_PARTITIONS = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"


def _admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": 5000})


def partition_states(
    bootstrap: str, topics: Sequence[str] | None = None
) -> dict[tuple[str, int], PartitionState]:
    """Every partition of ``topics`` (all topics, internal ones included, when None):
    its leader, replicas and in-sync replicas as the cluster's metadata has them."""
    metadata = _admin(bootstrap).list_topics(timeout=10)
    wanted = set(metadata.topics) if topics is None else set(topics)
    states = {}
    for name, topic in metadata.topics.items():
        if name not in wanted:
            continue
        assert topic.error is None, f"{name}: {topic.error}"
        for p, partition in topic.partitions.items():
            states[(name, p)] = PartitionState(
                partition.leader, tuple(partition.replicas), frozenset(partition.isrs)
            )
    missing = wanted - {name for name, _p in states}
    assert not missing, f"no such topics: {sorted(missing)}"
    return states


@dataclass(frozen=True)
class PartitionState:
    leader: int
    replicas: tuple[int, ...]
    isr: frozenset[int]

    @property
    def full(self) -> bool:
        return self.leader in self.replicas and self.isr == set(self.replicas)


def _cluster_healthy(cluster: KafkaCluster) -> bool:
    running = [node for node in cluster.nodes if node.running]
    if len(running) != len(cluster.nodes):
        return False
    try:
        states = partition_states(cluster.bootstrap)
    except Exception:  # a node still starting: ask again
        return False
    return all(state.full for state in states.values())


def wait_healthy(cluster: KafkaCluster, timeout: float = 150.0) -> None:
    """Until every node runs, each lists all the others, and every partition of every
    topic has all its replicas in sync: the state a shared cluster must be left in."""
    assert all(node.running for node in cluster.nodes), "a node is down"
    cluster.wait_ready(timeout)
    cluster.wait_until(lambda: _cluster_healthy(cluster), timeout, "every ISR to be full")


def make_preferred(cluster: KafkaCluster, node_id: int, topics: Sequence[str]) -> None:
    """Put ``node_id`` first in the replica list of every partition of ``topics`` (a
    reassignment that moves no data, by Kafka's own reassignment tool), so that a
    preferred election makes it their leader."""
    states = partition_states(cluster.bootstrap, topics)
    moves = [
        {
            "topic": topic,
            "partition": p,
            "replicas": [node_id, *(r for r in state.replicas if r != node_id)],
        }
        for (topic, p), state in sorted(states.items())
    ]
    plan = cluster.root / f"preferred-{node_id}-{uuid.uuid4().hex[:8]}.json"
    plan.write_text(json.dumps({"version": 1, "partitions": moves}))
    kafka_tool(
        REASSIGN_PARTITIONS, cluster.bootstrap, "--reassignment-json-file", str(plan), "--execute"
    )
    cluster.wait_until(
        lambda: all(
            s.replicas[0] == node_id for s in partition_states(cluster.bootstrap, topics).values()
        ),
        60,
        f"node {node_id} to be the first replica of {list(topics)}",
    )


def elect_preferred(cluster: KafkaCluster, node_id: int, topics: Sequence[str]) -> None:
    """Make ``node_id`` (already the preferred replica, see :func:`make_preferred`) the
    leader of every partition of ``topics``, as soon as it is in sync with them."""

    def led() -> bool:
        states = partition_states(cluster.bootstrap, topics)
        behind = [
            ck.TopicPartition(topic, p)
            for (topic, p), state in states.items()
            if state.leader != node_id
        ]
        if not behind:
            return True
        # a partition the node is not in sync with yet, or one elected meanwhile, answers
        # with an error in the result: asked again on the next round
        admin = _admin(cluster.bootstrap)  # held: a client collected early fails its calls
        with contextlib.suppress(ck.KafkaException):
            admin.elect_leaders(ElectionType.PREFERRED, behind).result(10)
        return False

    cluster.wait_until(led, 120, f"node {node_id} to lead {list(topics)}")

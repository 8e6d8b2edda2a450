"""headrace applications on three Apache Kafka 4.4 nodes while brokers and an instance
are SIGKILLed: exactly-once results, checked record for record.

Each job is two ``headrace run`` processes (exactly_once_v2) with a settings file in
Kafka Streams' spelling: ``replication.factor = 3`` and ``topic.min.insync.replicas =
2`` for every internal topic (checked on the cluster once they exist). One node is
made the leader of every partition of the job's input, output, changelog and
repartition topics (their first replica, then a preferred election). While the input
flows:

1. that node is SIGKILLed, started again, and made their leader again once in sync;
2. one instance is SIGKILLed and restarted on its state directory;
3. the node is SIGKILLed a second time and started again.

Each job takes 50,000 records at 1,000 a second; the last tenth waits until the kills
are done, so every kill finds the input still flowing (checked). Once every input record is committed, the
instances stop (SIGTERM, exit 0) and a read_committed reader takes the output to its
stable end: it must hold exactly the reference computed from the input (no record lost,
none twice, none unexpected; per key in order).

The cluster is the session's three nodes (``kafka_cluster_3``; a JVM cluster costs
tens of seconds to start): each test leaves it as it found it, every node up and every
ISR full, for the tests after it on the same worker.
"""

from __future__ import annotations

import asyncio
import random
import re
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from apache_kafka import (
    KafkaCluster,
    elect_preferred,
    make_preferred,
    partition_states,
    wait_healthy,
)
from cluster_apps import WINDOW_MS
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from eos_campaign import Verdict, check
from payments_job import expected as expected_balances
from payments_job import payments as payment_records
from rtprocs import Instance

pytestmark = pytest.mark.slow(seconds=60)  # each test about a minute on 3 Kafka nodes

APPS = Path(__file__).with_name("cluster_apps.py")
PARTITIONS = 4
REPLICATION = 3
MIN_ISR = "2"
VICTIM = 2  # the node that leads every partition of the job, and is killed twice
STEP_MS = 5  # event time between two input records
PAGES = 23

Row = tuple[str, str, int]
"""(key, value, timestamp ms)"""


def payment_rows(count: int) -> list[Row]:
    now = int(time.time() * 1000)
    return [(a, str(amount), now) for a, amount in payment_records(count, seed=21)]


def payment_reference(rows: list[Row]) -> dict[str, list[str]]:
    balances = expected_balances([(k, int(v)) for k, v, _at in rows])
    return {a: [f"{b},{n}" for b, n in seen] for a, seen in balances.items()}


def view_rows(count: int) -> list[Row]:
    """Page views keyed by user, event time ending a little before now (Apache Kafka
    refuses timestamps an hour ahead; time retention deletes old ones)."""
    rng = random.Random(5)
    start = int(time.time() * 1000) - count * STEP_MS - 5 * WINDOW_MS
    return [
        (f"user-{rng.randrange(500):03d}", f"page-{rng.randrange(PAGES):02d}", start + i * STEP_MS)
        for i in range(count)
    ]


def window_reference(rows: list[Row]) -> dict[str, list[str]]:
    """Per ``page@window start``, the running counts 1..n its updates must show."""
    counts: dict[str, int] = defaultdict(int)
    for _user, page, at in rows:
        counts[f"{page}@{at - at % WINDOW_MS}"] += 1
    return {window: [str(n) for n in range(1, total + 1)] for window, total in counts.items()}


@dataclass
class ClusterJob:
    """Two instances of one topology on the cluster, and what happened to them."""

    cluster: KafkaCluster
    root: Path
    name: str
    target: str
    rows: list[Row]
    per_second: float
    standbys: int = 0
    kills: list[str] = field(default_factory=list)
    instances: list[Instance] = field(default_factory=list)
    # The last tenth of the input waits for the kills: on a slow machine a node's
    # restart can outlast the input's pace, and every kill must land mid-stream.
    kills_done: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def prefix(self) -> str:
        return f"okc-{self.name}"

    @property
    def source(self) -> str:
        return f"{self.prefix}-in"

    @property
    def sink(self) -> str:
        return f"{self.prefix}-out"

    def settings_file(self) -> Path:
        """Kafka Streams' names, as a user moving from it would write them."""
        path = self.root / f"{self.name}.toml"
        path.write_text(
            'processing_guarantee = "exactly_once_v2"\n'
            f'"replication.factor" = {REPLICATION}\n'
            f'"topic.min.insync.replicas" = "{MIN_ISR}"\n'
            f"num_standby_replicas = {self.standbys}\n"
        )
        return path

    def spawn(self, settings: Path, name: str) -> Instance:
        instance = Instance(
            f"{APPS}:{self.target}",
            self.prefix,
            self.cluster.bootstrap,
            self.root / f"{name}-state",
            name,
            env={"CLUSTER_JOB_PREFIX": self.prefix},
        )
        instance.args += ["--settings", str(settings)]
        self.instances.append(instance)
        return instance.start()

    def logs(self) -> str:
        return "\n".join(f"--- {i.log_path.stem}\n{i.log()[-3000:]}" for i in self.instances)

    def job_topics(self) -> list[str]:
        names = AdminClient({"bootstrap.servers": self.cluster.bootstrap}).list_topics(timeout=10)
        return sorted(t for t in names.topics if t.startswith(f"{self.prefix}-"))

    def internal_topics(self) -> list[str]:
        return [t for t in self.job_topics() if t not in (self.source, self.sink)]

    def create_topics(self) -> None:
        admin = AdminClient({"bootstrap.servers": self.cluster.bootstrap})
        config = {"min.insync.replicas": MIN_ISR}
        done = admin.create_topics(
            [NewTopic(t, PARTITIONS, REPLICATION, config=config) for t in (self.source, self.sink)]
        )
        for future in done.values():
            future.result(30)

    def internal_topic_settings(self) -> dict[str, tuple[int, str]]:
        """Per internal topic: its replication factor and min.insync.replicas."""
        topics = self.internal_topics()
        states = partition_states(self.cluster.bootstrap, topics)
        admin = AdminClient({"bootstrap.servers": self.cluster.bootstrap})
        resources = [ConfigResource(ConfigResource.Type.TOPIC, t) for t in topics]
        out = {}
        for resource, future in admin.describe_configs(resources).items():
            configs = future.result(30)
            replicas = {len(s.replicas) for (t, _p), s in states.items() if t == resource.name}
            assert len(replicas) == 1, replicas
            out[resource.name] = (replicas.pop(), configs["min.insync.replicas"].value)
        return out

    async def committed(self) -> int:
        """Input records whose offsets the job has committed (0 while the cluster
        cannot say)."""
        admin = AIOKafkaAdminClient(bootstrap_servers=self.cluster.bootstrap)
        try:
            await admin.start()
            offsets = await admin.list_consumer_group_offsets(self.prefix)
            return sum(m.offset for tp, m in offsets.items() if tp.topic == self.source)
        except Exception:  # a node being killed: ask again
            return 0
        finally:
            await admin.close()

    async def committed_at_least(self, share: float, wait: float) -> None:
        deadline = time.monotonic() + wait
        while await self.committed() < share * len(self.rows):
            assert time.monotonic() < deadline, (
                f"{share:.0%} of the input not committed in {wait}s (kills {self.kills})\n"
                f"{self.logs()}"
            )
            await asyncio.sleep(0.2)

    async def produce(self) -> None:
        """The input in order at about ``per_second``, idempotent, so a broker kill
        neither loses nor doubles any."""
        producer = AIOKafkaProducer(
            bootstrap_servers=self.cluster.bootstrap,
            linger_ms=5,
            enable_idempotence=True,
            request_timeout_ms=60_000,
        )
        await producer.start()
        begun = time.monotonic()
        held = int(len(self.rows) * 0.9)
        try:
            for i, (key, value, at) in enumerate(self.rows):
                if i == held:
                    await producer.flush()
                    await self.kills_done.wait()
                    begun = time.monotonic() - i / self.per_second
                await producer.send(self.source, value.encode(), key=key.encode(), timestamp_ms=at)
                if i % 200 == 199:
                    ahead = (i + 1) / self.per_second - (time.monotonic() - begun)
                    if ahead > 0:
                        await asyncio.sleep(ahead)
            await producer.flush()
        finally:
            await producer.stop()

    async def kill_victim(self, producing: asyncio.Task[None], then_lead: bool) -> None:
        """SIGKILL the node leading the job's partitions while input flows, start it
        again, wait until every replica is in sync, and (``then_lead``) make it their
        leader again."""
        topics = self.job_topics()
        leaders = {s.leader for s in partition_states(self.cluster.bootstrap, topics).values()}
        assert leaders == {VICTIM}, leaders
        assert not producing.done(), "the input had all been sent before the broker kill"
        committed = await self.committed()
        self.cluster.node(VICTIM).kill()
        self.kills.append(f"broker {VICTIM} at {committed}")
        await asyncio.to_thread(self.cluster.restart, VICTIM)
        await asyncio.to_thread(wait_healthy, self.cluster)
        if then_lead:
            await asyncio.to_thread(elect_preferred, self.cluster, VICTIM, topics)

    async def kill_instance(self, producing: asyncio.Task[None]) -> None:
        assert not producing.done(), "the input had all been sent before the instance kill"
        committed = await self.committed()
        victim = self.instances[0]
        victim.kill()
        self.kills.append(f"instance {victim.log_path.stem} at {committed}")
        await asyncio.sleep(0.5)
        victim.start()

    async def read_output(self) -> list[tuple[str, str]]:
        """The whole output, read_committed, to its end once no transaction is open."""
        partitions = [TopicPartition(self.sink, p) for p in range(PARTITIONS)]
        ends = await stable_ends(self.cluster.bootstrap, partitions)
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.cluster.bootstrap,
            isolation_level="read_committed",
            enable_auto_commit=False,
            max_partition_fetch_bytes=4 * 1024 * 1024,
        )
        await consumer.start()
        got: list[tuple[str, str]] = []
        try:
            consumer.assign(partitions)
            await consumer.seek_to_beginning(*partitions)
            deadline = time.monotonic() + 120
            while any([await consumer.position(tp) < end for tp, end in ends.items()]):
                assert time.monotonic() < deadline, "the output's end was not reached"
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    got += [(r.key.decode(), r.value.decode()) for r in records]
        finally:
            await consumer.stop()
        return got


async def stable_ends(
    bootstrap: str, partitions: list[TopicPartition]
) -> dict[TopicPartition, int]:
    """The end offsets once the last stable offsets reach them: a transaction of a
    killed instance stays open until its successor fences it or it times out."""
    committed, uncommitted = (
        AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level=level)
        for level in ("read_committed", "read_uncommitted")
    )
    await committed.start()
    await uncommitted.start()
    try:
        deadline = time.monotonic() + 90
        while True:
            stable: dict[TopicPartition, int] = await committed.end_offsets(partitions)
            ends: dict[TopicPartition, int] = await uncommitted.end_offsets(partitions)
            if stable == ends:
                return ends
            assert time.monotonic() < deadline, f"a transaction stays open: {stable} {ends}"
            await asyncio.sleep(0.2)
    finally:
        await committed.stop()
        await uncommitted.stop()


@dataclass
class Outcome:
    verdict: Verdict
    records_out: int
    kills: list[str]
    seconds: float
    internal: dict[str, tuple[int, str]]
    codes: list[int]
    logs: str

    def line(self) -> str:
        return f"{self.records_out} out; kills {self.kills}; {self.verdict}; {self.seconds:.0f} s"


async def run_under_faults(
    job: ClusterJob, reference: Callable[[list[Row]], dict[str, list[str]]]
) -> Outcome:
    """The steps of the module docstring; the cluster is healthy again at the end."""
    started = time.monotonic()
    cluster = job.cluster
    try:
        job.create_topics()
        settings = job.settings_file()
        job.spawn(settings, f"{job.name}-a")
        job.spawn(settings, f"{job.name}-b")
        for instance in job.instances:
            await asyncio.to_thread(instance.wait_for, "tasks=", 120)
        internal = job.internal_topic_settings()
        await asyncio.to_thread(make_preferred, cluster, VICTIM, job.job_topics())
        await asyncio.to_thread(elect_preferred, cluster, VICTIM, job.job_topics())

        producing = asyncio.create_task(job.produce())
        try:
            await job.committed_at_least(0.1, 120)
            await job.kill_victim(producing, then_lead=True)
            await job.kill_instance(producing)
            await asyncio.sleep(3)  # the restarted instance rejoining as the node dies
            await job.kill_victim(producing, then_lead=False)
            job.kills_done.set()
            await producing
        finally:
            producing.cancel()
        await job.committed_at_least(1.0, 180)
        codes = [await asyncio.to_thread(i.stop) for i in job.instances]
        got = await job.read_output()
    finally:
        for instance in job.instances:
            if instance.proc is not None and instance.proc.poll() is None:
                instance.proc.kill()
                instance.proc.wait(10)
        for node in cluster.nodes:
            if not node.running:
                await asyncio.to_thread(cluster.restart, node.node_id)
        await asyncio.to_thread(wait_healthy, cluster)
    return Outcome(
        check(reference(job.rows), got, ordered=True),
        len(got),
        job.kills,
        time.monotonic() - started,
        internal,
        codes,
        job.logs(),
    )


def assert_exact(outcome: Outcome, job: ClusterJob, expected_out: int) -> None:
    print(f"{job.name}: {len(job.rows)} in, {outcome.line()}")
    assert outcome.verdict.exact, f"{outcome.line()}\n{outcome.logs}"
    assert outcome.records_out == expected_out
    assert [k.split()[0] for k in outcome.kills] == ["broker", "instance", "broker"]
    assert outcome.codes == [0, 0], outcome.logs
    assert outcome.internal and all(
        settings == (REPLICATION, MIN_ISR) for settings in outcome.internal.values()
    ), outcome.internal


@pytest.mark.timeout(420)
async def test_payments_balances_exact_through_leader_and_instance_kills(
    kafka_cluster_3: KafkaCluster, tmp_path: Path
) -> None:
    rows = payment_rows(50_000)
    job = ClusterJob(kafka_cluster_3, tmp_path, "payments", "payments", rows, per_second=1_000)
    outcome = await run_under_faults(job, payment_reference)
    assert_exact(outcome, job, len(rows))
    assert set(outcome.internal) == {f"{job.prefix}-balances-changelog"}


@pytest.mark.timeout(420)
async def test_windowed_counts_with_repartition_and_standby_exact_through_kills(
    kafka_cluster_3: KafkaCluster, tmp_path: Path
) -> None:
    rows = view_rows(50_000)
    job = ClusterJob(
        kafka_cluster_3, tmp_path, "windows", "page_windows", rows, per_second=1_000, standbys=1
    )
    outcome = await run_under_faults(job, window_reference)
    assert_exact(outcome, job, len(rows))
    assert any(t.endswith("-repartition") for t in outcome.internal), outcome.internal
    assert any(t.endswith("-changelog") for t in outcome.internal), outcome.internal
    status = "\n".join(i.log() for i in job.instances)
    assert re.search(r"standby=\d+_\d+", status), outcome.logs

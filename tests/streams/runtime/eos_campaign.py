"""The exactly-once fault campaign: each case runs one topology kind of
``eos_campaign_apps.py`` as a ``headrace run`` process under exactly_once_v2, SIGKILLs it
at a step of a commit (through ``kafka_kill_proxy.KillProxy``) or while it restores its
stores, restarts it on the same or an emptied state directory, maybe SIGKILLs a broker
on the way, and lets it run to the end of its input. A read_committed reader then
checks the output against a reference computed from the input: every expected record
exactly once, nothing else, and for the kinds whose output per key has an order
(running counts, balances, tagged records), that order.

A case, step by step:

1. create the case's topics (two partitions each) and start the application through
   the proxy;
2. produce the input at a steady rate, so that it still flows when the kills land;
3. once the application has committed ``share`` of the input, arm the proxy: the next
   commit's armed step SIGKILLs it (``offsets``, ``end_txn``, ``after_end_txn``);
4. restart it, on an emptied state directory if the case says so; for ``restore``
   cases the restart is on an emptied directory with Fetch answers held back, and the
   process is SIGKILLed again as soon as its log says a task is restoring, then
   restarted on that half-restored directory;
5. for cases with a broker kill: once it has committed 60% of the input, SIGKILL a
   broker (the built-in one, restarted on its data dir; one Apache Kafka node, started
   again), and the application recovers on its own;
6. wait until its committed offsets reach the end of the input, stop it (SIGTERM),
   and read the output read_committed to its end.

Used by ``test_eos_fault_campaign.py`` (small inputs) and
``benchmarks/eos_fault_campaign.py`` (the long form).
"""

from __future__ import annotations

import asyncio
import re
import shutil
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from eos_campaign_apps import JOIN_DIFFERENCE_MS, WINDOW_MS
from kafka_kill_proxy import KillProxy
from payments_job import expected as expected_balances
from payments_job import payments as payment_records
from rtprocs import Instance

APPS = Path(__file__).with_name("eos_campaign_apps.py")
KINDS = ("stateless", "stateful", "windowed", "suppressed", "joined", "payments")
STATEFUL_KINDS = KINDS[1:]
PHASES = ("offsets", "end_txn", "after_end_txn", "restore")
PARTITIONS = 2
KEYS = 40
STEP_MS = 10  # event time between two input records

Row = tuple[str, str, str, int | None, int | None]
"""A record to produce: (topic suffix ``in`` or ``in2``, key, value, timestamp, partition
or None for the key's)."""
Output = tuple[str, str]


def recent_start(count: int) -> int:
    """An event time for the first of ``count`` records such that the last ends a little
    before now, on a window edge. Not a fixed date: a broker's time retention (7 days by
    default) deletes records whose timestamps are older, input and output alike, and
    Apache Kafka rejects timestamps more than an hour ahead."""
    start = int(time.time() * 1000) - (count + 1) * STEP_MS - 20 * WINDOW_MS
    return start - start % WINDOW_MS


def inputs(kind: str, count: int, seed: int = 11, start: int | None = None) -> list[Row]:
    """``count`` input records of ``kind`` (the join: ``count`` on each side), in order,
    event time from ``start`` (by default :func:`recent_start`)."""
    t0 = recent_start(count) if start is None else start
    if kind == "payments":
        return [("in", a, str(amount), None, None) for a, amount in payment_records(count, seed)]
    rows: list[Row] = []
    for i in range(count):
        key, at = f"k{i % KEYS:02d}", t0 + i * STEP_MS
        rows.append(("in", key, f"L{i}" if kind == "joined" else str(i), at, None))
        if kind == "joined":
            rows.append(("in2", key, f"R{i}", at + 1, None))
    if kind in ("windowed", "suppressed"):
        # Stream time past every window, on each partition: all windows close. The
        # flush records' own windows never do.
        flush = t0 + (count + 1) * STEP_MS + 10 * WINDOW_MS
        rows += [("in", "flush", "0", flush, p) for p in range(PARTITIONS)]
    return rows


def reference(kind: str, rows: list[Row]) -> dict[str, list[str]]:
    """Per output key, the output values the input must give, in order."""
    want: dict[str, list[str]] = defaultdict(list)
    if kind == "stateless":
        for _t, key, value, _at, _p in rows:
            if int(value) % 5:
                want[key].append(f"{value}:{int(value) * 2}")
    elif kind == "stateful":
        for _t, key, _v, _at, _p in rows:
            want[key].append(str(len(want[key]) + 1))
    elif kind in ("windowed", "suppressed"):
        counts: Counter[str] = Counter()
        for _t, key, _v, at, _p in rows:
            if key != "flush":
                assert at is not None
                counts[f"{key}@{at - at % WINDOW_MS}"] += 1
        for name, n in counts.items():
            want[name].append(str(n))
    elif kind == "joined":
        left = {v[1:]: (k, at) for t, k, v, at, _p in rows if t == "in" and at is not None}
        for t, key, value, at, _p in rows:
            i = value[1:]
            assert at is not None
            if t == "in2" and left[i][0] == key and abs(left[i][1] - at) <= JOIN_DIFFERENCE_MS:
                want[key].append(f"L{i}+R{i}")
    elif kind == "payments":
        for account, balances in expected_balances(
            [(k, int(v)) for _t, k, v, _at, _p in rows]
        ).items():
            want[account] = [f"{b},{n}" for b, n in balances]
    return dict(want)


ORDERED = {"stateless", "stateful", "payments"}
"""Kinds whose outputs per key have one right order (a join's matches and a key's
windows may come out in either order when two inputs or windows close together)."""


@dataclass
class Verdict:
    """How the output differs from the reference; exact when every list is empty."""

    lost: list[Output] = field(default_factory=list)
    repeated: list[tuple[Output, int]] = field(default_factory=list)
    unexpected: list[Output] = field(default_factory=list)
    out_of_order: list[str] = field(default_factory=list)

    @property
    def exact(self) -> bool:
        return not (self.lost or self.repeated or self.unexpected or self.out_of_order)

    def anomalies(self) -> int:
        return len(self.lost) + len(self.repeated) + len(self.unexpected) + len(self.out_of_order)

    def __str__(self) -> str:
        parts = [
            f"{name}: {len(items)} e.g. {items[:4]}" for name, items in vars(self).items() if items
        ]
        return "; ".join(parts) or "exact"


def check(want: dict[str, list[str]], got: list[Output], ordered: bool) -> Verdict:
    """Every output of ``want`` once in ``got``, nothing else; per key in ``want``'s
    order when ``ordered``."""
    expected = Counter((k, v) for k, values in want.items() for v in values)
    seen = Counter(got)
    verdict = Verdict(
        lost=sorted((expected - seen).elements()),
        repeated=sorted((o, n) for o, n in seen.items() if n > expected[o] > 0),
        unexpected=sorted(o for o in seen if expected[o] == 0),
    )
    if ordered:
        by_key: dict[str, list[str]] = defaultdict(list)
        for key, value in got:
            by_key[key].append(value)
        verdict.out_of_order = sorted(
            k
            for k, values in by_key.items()
            if Counter(values) == Counter(want.get(k, [])) and values != want[k]
        )
    return verdict


@dataclass(frozen=True)
class Case:
    kind: str
    phase: str
    restart: str  # "same" or "emptied" state directory
    broker_kill: bool = False
    count: int = 3_000
    per_second: float = 1_500
    share: float = 0.25  # of the input committed when the proxy is armed
    guarantee: str = "exactly_once_v2"  # at_least_once: the oracle's control

    def __post_init__(self) -> None:
        assert self.kind in KINDS and self.restart in ("same", "emptied")
        assert self.phase in (PHASES if self.guarantee == "exactly_once_v2" else ("offset_commit",))
        assert self.phase != "restore" or self.kind in STATEFUL_KINDS, "nothing to restore"

    @property
    def name(self) -> str:
        broker = "-broker" if self.broker_kill else ""
        alos = "-alos" if self.guarantee == "at_least_once" else ""
        return f"{self.kind}-{self.phase}-{self.restart}{broker}{alos}"


@dataclass
class Broker:
    """Where a case runs: ``bootstrap`` for the test's own clients, ``upstreams`` (one
    per node) for the proxy, ``replication`` for every topic, and how to SIGKILL a
    broker and bring it back (waiting until it serves again)."""

    name: str
    bootstrap: str
    upstreams: list[str]
    replication: int
    kill_one: Callable[[], None]

    @property
    def app_env(self) -> dict[str, str]:
        if self.replication == 1:
            return {}
        return {
            "HEADRACE_REPLICATION_FACTOR": str(self.replication),
            "HEADRACE_TOPIC_CONFIGS": '{"min.insync.replicas": "2"}',
        }


@dataclass
class Outcome:
    case: Case
    verdict: Verdict
    records_in: int
    records_expected: int
    records_out: int
    kills: list[str]
    seconds: float
    log: str

    def line(self) -> str:
        return (
            f"{self.case.name}: {self.records_in} in, {self.records_out} out of "
            f"{self.records_expected}, "
            f"kills {', '.join(self.kills)}; {self.verdict}; {self.seconds:.0f} s"
        )


class CaseRun:
    """One case against one broker; ``run()`` follows the module docstring's steps."""

    def __init__(self, case: Case, broker: Broker, root: Path, tag: str) -> None:
        self.case = case
        self.broker = broker
        self.prefix = f"eosc-{tag}-{case.name}"
        self.rows = inputs(case.kind, case.count)
        self.kills: list[str] = []
        self.proxy = KillProxy(broker.upstreams)
        self.instance = Instance(
            f"{APPS}:{case.kind}",
            self.prefix,
            self.proxy.bootstrap,
            root / f"{self.prefix}-state",
            self.prefix,
            env={
                "HEADRACE_PROCESSING_GUARANTEE": case.guarantee,
                "EOS_CAMPAIGN_PREFIX": self.prefix,
                **broker.app_env,
            },
        )

    @property
    def sources(self) -> list[str]:
        topics = [f"{self.prefix}-in"]
        return topics + ([f"{self.prefix}-in2"] if self.case.kind == "joined" else [])

    @property
    def sink(self) -> str:
        return f"{self.prefix}-out"

    async def run(self, wait: float = 120) -> Outcome:
        started = time.monotonic()
        instance = self.instance
        self.proxy.start()
        try:
            await self._create_topics()
            instance.start()
            await asyncio.to_thread(instance.wait_for, "tasks=0_", 90)
            producing = asyncio.create_task(self._produce())
            try:
                await self._committed_at_least(self.case.share, wait)
                await self._kill_at_commit(
                    "end_txn" if self.case.phase == "restore" else self.case.phase
                )
                if self.case.phase == "restore":
                    await self._kill_while_restoring(wait)
                if self.case.restart == "emptied":
                    shutil.rmtree(instance.state_dir, ignore_errors=True)
                instance.start()
                if self.case.broker_kill:
                    await self._committed_at_least(0.6, wait)
                    await asyncio.to_thread(self.broker.kill_one)
                    self.kills.append("broker")
                await producing
            finally:
                producing.cancel()
            await self._committed_at_least(1.0, wait)
            code = await asyncio.to_thread(instance.stop)
            assert code == 0, f"exit {code}\n{instance.log()[-3000:]}"
            got = await self._read_output()
        finally:
            self.proxy.stop()
            if instance.proc is not None and instance.proc.poll() is None:
                instance.proc.kill()
                instance.proc.wait(10)
        want = reference(self.case.kind, self.rows)
        verdict = check(want, got, self.case.kind in ORDERED)
        return Outcome(
            self.case,
            verdict,
            len(self.rows),
            sum(map(len, want.values())),
            len(got),
            self.kills,
            time.monotonic() - started,
            instance.log(),
        )

    async def _create_topics(self) -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=self.broker.bootstrap)
        await admin.start()
        try:
            await admin.create_topics(
                [
                    NewTopic(topic, PARTITIONS, self.broker.replication)
                    for topic in [*self.sources, self.sink]
                ]
            )
        finally:
            await admin.close()

    async def _produce(self) -> None:
        """The input in order at about ``per_second`` records a second, idempotent, so
        a broker kill neither loses nor doubles any."""
        producer = AIOKafkaProducer(
            bootstrap_servers=self.broker.bootstrap,
            linger_ms=5,
            enable_idempotence=True,
            request_timeout_ms=60_000,
        )
        await producer.start()
        begun = time.monotonic()
        try:
            for i, (topic, key, value, at, partition) in enumerate(self.rows):
                await producer.send(
                    f"{self.prefix}-{topic}",
                    value.encode(),
                    key=key.encode(),
                    timestamp_ms=at,
                    partition=partition,
                )
                if i % 100 == 99:
                    ahead = (i + 1) / self.case.per_second - (time.monotonic() - begun)
                    if ahead > 0:
                        await asyncio.sleep(ahead)
            await producer.flush()
        finally:
            await producer.stop()

    async def _committed_at_least(self, share: float, wait: float) -> None:
        """Until the application's committed offsets cover ``share`` of the input."""
        total = len(self.rows)
        deadline = time.monotonic() + wait
        admin = AIOKafkaAdminClient(bootstrap_servers=self.broker.bootstrap)
        await admin.start()
        try:
            while True:
                try:
                    offsets = await admin.list_consumer_group_offsets(self.prefix)
                    done = sum(m.offset for tp, m in offsets.items() if tp.topic in self.sources)
                except Exception:  # a broker being killed: ask again
                    done = 0
                if done >= share * total:
                    return
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"{self.case.name}: only {done} of {total} input records committed "
                        f"(kills {self.kills})\n{self.instance.log()[-3000:]}"
                    )
                await asyncio.sleep(0.1)
        finally:
            await admin.close()

    async def _kill_at_commit(self, phase: str) -> None:
        proc = self.instance.proc
        assert proc is not None
        self.proxy.arm(phase, proc.pid)
        killed = await asyncio.to_thread(self.proxy.killed.wait, 60)
        assert killed, (
            f"{self.case.name}: no {phase} step within 60 s\n{self.instance.log()[-3000:]}"
        )
        await asyncio.to_thread(proc.wait, 10)
        self.kills.append(phase)

    async def _kill_while_restoring(self, wait: float) -> None:
        """Restart on an emptied state dir with every Fetch answer held back 0.5 s, and
        SIGKILL as soon as a task says it is restoring records."""
        instance = self.instance
        shutil.rmtree(instance.state_dir, ignore_errors=True)
        mark = len(instance.log())
        self.proxy.slow_fetch = 0.5
        instance.start()
        restoring = re.compile(r"task (\S+) opened; restoring (?!nothing)")
        deadline = time.monotonic() + wait
        found = None
        while found is None:
            found = restoring.search(instance.log()[mark:])
            assert time.monotonic() < deadline, f"no restore seen\n{instance.log()[-3000:]}"
            await asyncio.sleep(0.01)
        instance.kill()
        self.proxy.slow_fetch = 0.0
        after = instance.log()[mark:]
        assert f"task {found.group(1)} restored" not in after, (
            f"the kill missed the restore\n{after}"
        )
        self.kills.append("restore")

    async def _read_output(self) -> list[Output]:
        """The whole output, read_committed, to its end once no transaction is open on
        it. The application has stopped, but a transaction of a killed process whose
        transactional id died with its state dir stays open until the broker aborts it
        on timeout (Apache Kafka looks for those every 10 s): until then the last stable
        offset stays at its first record, and what follows is not readable yet."""
        partitions = [TopicPartition(self.sink, p) for p in range(PARTITIONS)]
        ends = await self._stable_ends(partitions)
        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.broker.bootstrap,
            isolation_level="read_committed",
            enable_auto_commit=False,
        )
        await consumer.start()
        got: list[Output] = []
        try:
            consumer.assign(partitions)
            await consumer.seek_to_beginning(*partitions)
            deadline = time.monotonic() + 60 + len(self.rows) / 5_000
            while any([await consumer.position(tp) < end for tp, end in ends.items()]):
                assert time.monotonic() < deadline, "the output's end was not reached"
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    got += [(r.key.decode(), r.value.decode()) for r in records]
        finally:
            await consumer.stop()
        return got

    async def _stable_ends(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        """The output's end offsets once its last stable offsets reach them."""
        committed, uncommitted = (
            AIOKafkaConsumer(bootstrap_servers=self.broker.bootstrap, isolation_level=level)
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


async def run_cases(
    cases: list[Case],
    broker: Broker,
    root: Path,
    tag: str,
    report: Callable[[Outcome], None] = lambda _outcome: None,
) -> list[Outcome]:
    """Run ``cases`` one after the other, reporting each outcome as it comes."""
    outcomes = []
    for case in cases:
        outcome = await CaseRun(case, broker, root, tag).run()
        outcomes.append(outcome)
        report(outcome)
    return outcomes

"""The exactly-once fault campaign of ``eos_campaign.py``, the short form: every
topology kind (stateless, stateful count, windowed emit-final, suppress, stream-stream
join, the payments app) SIGKILLed at a step of a commit or while restoring, restarted on
the same or an emptied state directory, against the built-in broker and against three
Apache Kafka 4.4 nodes (replication 3, min.insync.replicas 2); one case per broker also
SIGKILLs a broker. A read_committed reader checks every output against the input.

``benchmarks/eos_fault_campaign.py`` runs the long form (1,000,000 stateless records,
many runs and kills).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from apache_kafka import KafkaCluster
from brokerproc import BrokerProcess
from eos_campaign import (
    KINDS,
    ORDERED,
    Broker,
    Case,
    CaseRun,
    check,
    inputs,
    recent_start,
    reference,
)

pytestmark = pytest.mark.slow

BUILTIN_CASES = [
    Case("stateless", "offsets", "same"),
    Case("stateful", "end_txn", "emptied"),
    Case("windowed", "restore", "same"),
    Case("suppressed", "after_end_txn", "emptied", broker_kill=True),
    Case("joined", "end_txn", "same"),
    Case("payments", "offsets", "emptied"),
]
KAFKA_CASES = [
    Case("stateless", "end_txn", "emptied", broker_kill=True),
    Case("stateful", "restore", "same"),
    Case("windowed", "offsets", "emptied"),
    Case("suppressed", "end_txn", "same"),
    Case("joined", "restore", "same"),
    Case("payments", "after_end_txn", "same"),
]


@pytest.fixture(scope="module")
def builtin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    broker = BrokerProcess(tmp_path_factory.mktemp("campaign-broker") / "data", "--fsync", "never")
    broker.start()

    def kill_one() -> None:
        broker.kill()
        broker.start()  # the same port and data dir

    try:
        yield Broker("builtin", broker.bootstrap, [broker.bootstrap], 1, kill_one)
    finally:
        broker.kill()


@pytest.fixture
def kafka3(kafka_cluster_3: KafkaCluster) -> Broker:
    cluster = kafka_cluster_3

    def kill_one() -> None:
        node = cluster.nodes[1]
        node.kill()
        cluster.restart(node.node_id)

    return Broker(
        "kafka3",
        cluster.bootstrap,
        [node.bootstrap for node in cluster.nodes],
        3,
        kill_one,
    )


async def _run(case: Case, broker: Broker, root: Path) -> None:
    outcome = await CaseRun(case, broker, root, broker.name).run()
    assert outcome.verdict.exact, f"{outcome.line()}\n{outcome.log[-5000:]}"
    assert len(outcome.kills) >= 1 + (case.phase == "restore") + case.broker_kill
    assert outcome.records_out == outcome.records_expected


def test_the_cases_cover_every_kind_on_both_brokers() -> None:
    assert {c.kind for c in BUILTIN_CASES} == set(KINDS) == {c.kind for c in KAFKA_CASES}
    assert {c.phase for c in BUILTIN_CASES + KAFKA_CASES} == {
        "offsets",
        "end_txn",
        "after_end_txn",
        "restore",
    }
    assert {c.restart for c in BUILTIN_CASES} == {"same", "emptied"}


@pytest.mark.timeout(150)
@pytest.mark.parametrize("case", BUILTIN_CASES, ids=lambda c: c.name)
async def test_builtin_broker(case: Case, builtin: Broker, tmp_path: Path) -> None:
    await _run(case, builtin, tmp_path)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("case", KAFKA_CASES, ids=lambda c: c.name)
async def test_apache_kafka_three_nodes(case: Case, kafka3: Broker, tmp_path: Path) -> None:
    await _run(case, kafka3, tmp_path)


@pytest.mark.parametrize("kind", KINDS)
def test_the_oracle_catches_a_planted_loss_repeat_stray_and_swap(kind: str) -> None:
    want = reference(kind, inputs(kind, 600))
    exact = [(k, v) for k, values in want.items() for v in values]
    assert check(want, exact, kind in ORDERED).exact
    key, first = exact[0]
    assert check(want, exact[1:], kind in ORDERED).lost == [(key, first)]
    assert check(want, [*exact, exact[5]], kind in ORDERED).repeated == [(exact[5], 2)]
    stray = check(want, [*exact, (key, "never")], kind in ORDERED)
    assert stray.unexpected == [(key, "never")]
    if kind in ORDERED:  # a key's two outputs swapped
        later = next(i for i, (k, _v) in enumerate(exact[1:], 1) if k == key)
        swapped = list(exact)
        swapped[0], swapped[later] = swapped[later], swapped[0]
        assert check(want, swapped, True).out_of_order == [key]


def test_the_references_follow_the_inputs() -> None:
    assert sum(map(len, reference("stateless", inputs("stateless", 100)).values())) == 80
    assert reference("stateful", inputs("stateful", 80))["k00"] == ["1", "2"]
    start = recent_start(1_000)
    windows = reference("windowed", inputs("windowed", 1_000, start=start))
    assert sum(int(v) for values in windows.values() for v in values) == 1_000
    assert windows == reference("suppressed", inputs("suppressed", 1_000, start=start))
    assert sum(map(len, reference("joined", inputs("joined", 300)).values())) == 300
    balances = reference("payments", inputs("payments", 500))
    assert sum(map(len, balances.values())) == 500


@pytest.mark.timeout(150)
async def test_the_campaign_sees_at_least_once_repeat_output(
    builtin: Broker, tmp_path: Path
) -> None:
    """The control: the same stateless case at least once, SIGKILLed as its OffsetCommit
    goes out (its output already written), repeats that output after the restart, and
    the campaign's reader says so."""
    case = Case("stateless", "offset_commit", "same", guarantee="at_least_once")
    outcome = await CaseRun(case, builtin, tmp_path, builtin.name).run()
    assert outcome.kills == ["offset_commit"]
    assert outcome.verdict.repeated, outcome.line()
    assert not outcome.verdict.lost and not outcome.verdict.unexpected, outcome.line()

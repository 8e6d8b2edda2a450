"""Exactly once into a topic's table: through SIGKILLs of the broker (whose table writer,
a child process, dies with it) while records stream in, each kill timed to land inside a table commit
(after its data file, before its log entry), every acknowledged record lands once; an
aborted transaction's records never land, an open one's only once it commits.

The kills run on 300,000 records here; ``benchmarks/table_topics_eos.py`` runs the same
scenario (``tests/table_topic_kills.py``) on a million."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.compute as pc
import pytest
from brokerproc import BrokerProcess
from confluent_kafka import Producer
from table_topic_io import create_topic, table_config, table_rows
from table_topic_kills import PARTITIONS, run_through_kills, table_now

RECORDS = 300_000
KILLS = 3


@pytest.fixture
def lake(tmp_path: Path) -> Path:
    return tmp_path / "lake"


@pytest.fixture
def broker(tmp_path: Path, lake: Path) -> Iterator[BrokerProcess]:
    with BrokerProcess(tmp_path / "data", "--table-location", str(lake)) as proc:
        yield proc
        proc.kill()


def test_every_acknowledged_record_lands_once_through_sigkills(
    broker: BrokerProcess, lake: Path
) -> None:
    outcome = run_through_kills(broker, lake, RECORDS, KILLS)
    assert not outcome.problems, f"{outcome.problems} (seed {outcome.seed})"
    assert outcome.acked == RECORDS
    # every kill came while the table was being written, none after it was complete
    killed_at = outcome.rows_when_killed
    assert len(killed_at) == KILLS and killed_at == sorted(killed_at), killed_at
    assert killed_at[0] > 0 and killed_at[-1] < RECORDS, killed_at
    # and at least one between a commit's data file and its log entry
    assert any(outcome.mid_commit), outcome.mid_commit


def test_aborted_records_never_land_and_open_ones_only_once_committed(
    broker: BrokerProcess, lake: Path
) -> None:
    create_topic(broker.bootstrap, "txns", PARTITIONS, table_config("key_value", 100))
    txn = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "table-txn"})
    txn.init_transactions(15)
    plain = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})

    def transaction(prefix: bytes, n: int, commit: bool) -> None:
        txn.begin_transaction()
        for i in range(n):
            txn.produce("txns", value=prefix + b"%d" % i, partition=i % PARTITIONS)
        if commit:
            txn.commit_transaction(15)
        else:
            txn.abort_transaction(15)

    transaction(b"committed-a-", 100, commit=True)
    transaction(b"aborted-", 100, commit=False)
    for i in range(20):  # records of no transaction between them
        plain.produce("txns", value=b"plain-%d" % i, partition=i % PARTITIONS)
    assert plain.flush(15) == 0
    transaction(b"committed-b-", 100, commit=True)

    expected = 220
    values = table_rows(lake / "txns", expected, timeout=30)["value"]
    assert len(values) == expected
    assert not pc.any(pc.starts_with(values, "aborted-")).as_py()
    assert sorted(v.as_py() for v in values) == sorted(
        [b"committed-a-%d" % i for i in range(100)]
        + [b"plain-%d" % i for i in range(20)]
        + [b"committed-b-%d" % i for i in range(100)]
    )

    # an open transaction: its records are in the log, not yet in the table
    txn.begin_transaction()
    for i in range(50):
        txn.produce("txns", value=b"open-%d" % i, partition=i % PARTITIONS)
    txn.flush(15)
    for i in range(10):  # later records of no transaction wait behind it, as they should
        plain.produce("txns", value=b"later-%d" % i, partition=i % PARTITIONS)
    assert plain.flush(15) == 0
    time.sleep(1.5)  # many commit intervals
    assert table_now(lake / "txns").num_rows == expected
    txn.commit_transaction(15)
    landed = table_rows(lake / "txns", expected + 60, timeout=30)
    assert landed.num_rows == expected + 60
    assert sum(v.as_py().startswith(b"open-") for v in landed["value"]) == 50

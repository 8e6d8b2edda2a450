"""Transactions with aiokafka, kafka-python and confluent-kafka, unchanged.

Each client: commit and abort seen by read_committed and read_uncommitted readers,
offsets sent inside a transaction committed only with it, a zombie fenced by a second
producer of the same transactional id, and a transaction aborted by its timeout.
"""

from __future__ import annotations

import contextlib
import time

import pytest
from brokerproc import BrokerProcess
from kafka_clients import Confluent, unique
from kio.schema.describe_transactions.v0.request import DescribeTransactionsRequest
from kio.schema.types import TransactionalId
from rawkafka import RawClient
from txn_clients import CLIENTS, committed, producer, read

pytestmark = pytest.mark.conformance

READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"


def _values(prefix: str, n: int) -> list[bytes]:
    return [f"{prefix}-{i}".encode() for i in range(n)]


def _wait_for_state(bootstrap: str, transactional_id: str, state: str, within: float) -> None:
    """Until the coordinator's DescribeTransactions answers ``state`` for the id."""
    request = DescribeTransactionsRequest(transactional_ids=(TransactionalId(transactional_id),))
    deadline = time.monotonic() + within
    with RawClient(bootstrap) as admin:
        while True:
            (seen,) = admin.request(65, 0, request).transaction_states
            if seen.transaction_state == state:
                return
            assert time.monotonic() < deadline, f"{transactional_id} still {seen}"
            time.sleep(0.05)


@pytest.mark.parametrize("client", CLIENTS)
def test_commit_and_abort_under_both_isolation_levels(
    client: str, broker_process: BrokerProcess
) -> None:
    bs = broker_process.bootstrap
    topic = unique(f"txn-{client}")
    Confluent().create_topic(bs, topic, 3)
    p = producer(client, bs, unique("tid"))
    try:
        p.begin()
        p.send(topic, _values("c1", 60))
        p.commit()
        p.begin()
        p.send(topic, _values("ab", 60))
        p.abort()
        p.begin()
        p.send(topic, _values("c2", 60))
        p.commit()
    finally:
        p.close()
    seen = read(client, bs, topic, 3, READ_COMMITTED, expect=120)
    assert sorted(seen) == sorted(_values("c1", 60) + _values("c2", 60))
    everything = read(client, bs, topic, 3, READ_UNCOMMITTED, expect=180)
    assert sorted(everything) == sorted(_values("c1", 60) + _values("ab", 60) + _values("c2", 60))


@pytest.mark.parametrize("client", CLIENTS)
def test_offsets_in_a_transaction_are_committed_only_with_it(
    client: str, broker_process: BrokerProcess
) -> None:
    bs = broker_process.bootstrap
    topic, source, group = unique("out"), unique("src"), unique("grp")
    Confluent().create_topic(bs, topic, 1)
    Confluent().create_topic(bs, source, 1)
    p = producer(client, bs, unique("tid"))
    try:
        p.begin()
        p.send(topic, _values("x", 5))
        p.send_offsets(group, {(source, 0): 17})
        p.abort()
        assert committed(client, bs, group, source, 0) is None
        p.begin()
        p.send(topic, _values("y", 5))
        p.send_offsets(group, {(source, 0): 42})
        assert committed(client, bs, group, source, 0) is None  # not before the commit
        p.commit()
    finally:
        p.close()
    assert committed(client, bs, group, source, 0) == 42


@pytest.mark.parametrize("client", CLIENTS)
def test_a_second_producer_fences_the_zombie(client: str, broker_process: BrokerProcess) -> None:
    bs = broker_process.bootstrap
    topic, tid = unique("fence"), unique("tid")
    Confluent().create_topic(bs, topic, 1)
    zombie = producer(client, bs, tid)
    zombie.begin()
    zombie.send(topic, _values("zombie", 3))
    successor = producer(client, bs, tid)  # fences the zombie, aborting its transaction
    try:
        with pytest.raises(Exception):  # noqa: B017 - each client names fencing differently
            zombie.commit()
        successor.begin()
        successor.send(topic, _values("live", 3))
        successor.commit()
    finally:
        for p in (zombie, successor):
            with contextlib.suppress(Exception):  # a fenced producer may refuse to close
                p.close()
    assert sorted(read(client, bs, topic, 1, READ_COMMITTED, expect=3)) == _values("live", 3)
    assert len(read(client, bs, topic, 1, READ_UNCOMMITTED, expect=6)) == 6


@pytest.mark.parametrize("client", CLIENTS)
def test_a_transaction_past_its_timeout_is_aborted(
    client: str, broker_process: BrokerProcess
) -> None:
    bs = broker_process.bootstrap
    topic = unique("timeout")
    Confluent().create_topic(bs, topic, 1)
    tid = unique("tid")
    p = producer(client, bs, tid, timeout_ms=1500)
    try:
        p.begin()
        p.send(topic, _values("late", 4))
        _wait_for_state(bs, tid, "CompleteAbort", within=30)  # the coordinator's own abort
        with pytest.raises(Exception):  # noqa: B017 - fenced by the abort's epoch bump
            p.commit()
    finally:
        with contextlib.suppress(Exception):
            p.close()
    # The abort marker moved the last stable offset past the records, which stay hidden.
    other = producer(client, bs, unique("tid"))
    try:
        other.begin()
        other.send(topic, _values("after", 2))
        other.commit()
    finally:
        other.close()
    assert read(client, bs, topic, 1, READ_COMMITTED, expect=2) == _values("after", 2)

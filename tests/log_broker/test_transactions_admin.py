"""DescribeTransactions and ListTransactions: what ``kafka-transactions.sh`` and admin
clients show of the coordinator's transactional ids, with an open transaction from a
third-party producer (librdkafka)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from brokerproc import BrokerProcess
from kio.schema.describe_transactions.v0.request import DescribeTransactionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.list_transactions.v0.request import ListTransactionsRequest as ListV0
from kio.schema.list_transactions.v1.request import ListTransactionsRequest as ListV1
from kio.schema.types import TransactionalId
from kio.static.primitive import i64
from rawkafka import RawClient


@pytest.fixture(scope="module")
def open_and_committed(broker_process: BrokerProcess) -> Iterator[tuple[str, object]]:
    """One transactional id with a transaction open on two partitions, one whose
    transaction committed."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    bootstrap = broker_process.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic("txns", 2, 1)]).values():
        future.result(30)
    done = Producer({"bootstrap.servers": bootstrap, "transactional.id": "done-txn"})
    done.init_transactions(30)
    done.begin_transaction()
    done.produce("txns", value=b"c", partition=0)
    done.commit_transaction(30)
    pending = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": "open-txn",
            "transaction.timeout.ms": 600_000,
        }
    )
    pending.init_transactions(30)
    pending.begin_transaction()
    pending.produce("txns", value=b"p", partition=0)
    pending.produce("txns", value=b"p", partition=1)
    pending.flush(30)
    yield bootstrap, pending
    pending.abort_transaction(30)


def test_describe_names_state_producer_and_partitions(
    open_and_committed: tuple[str, object],
) -> None:
    bootstrap, _ = open_and_committed
    client = RawClient(bootstrap)
    try:
        response = client.request(
            65,
            0,
            DescribeTransactionsRequest(
                transactional_ids=tuple(map(TransactionalId, ("open-txn", "done-txn", "nobody")))
            ),
        )
    finally:
        client.close()
    by_id = {s.transactional_id: s for s in response.transaction_states}
    pending = by_id["open-txn"]
    assert pending.error_code == ErrorCode.none and pending.transaction_state == "Ongoing"
    assert [(t.topic, sorted(t.partitions)) for t in pending.topics] == [("txns", [0, 1])]
    assert pending.producer_id >= 0 and pending.transaction_timeout.total_seconds() == 600
    assert 0 < time.time() - pending.transaction_start_time.timestamp() < 120
    assert (
        by_id["done-txn"].transaction_state == "CompleteCommit" and by_id["done-txn"].topics == ()
    )
    assert by_id["nobody"].error_code == ErrorCode.transactional_id_not_found


def test_list_filters_by_state_producer_and_duration(
    open_and_committed: tuple[str, object],
) -> None:
    bootstrap, _ = open_and_committed
    client = RawClient(bootstrap)
    try:
        everything = client.request(66, 0, ListV0())
        ongoing = client.request(66, 0, ListV0(state_filters=("Ongoing", "NoSuchState")))
        long_running = client.request(66, 1, ListV1(duration_filter=i64(3_600_000)))
        recent = client.request(66, 1, ListV1(duration_filter=i64(0), state_filters=("Ongoing",)))
    finally:
        client.close()
    ids = {s.transactional_id: s for s in everything.transaction_states}
    assert {"open-txn", "done-txn"} <= set(ids)
    assert [s.transactional_id for s in ongoing.transaction_states] == ["open-txn"]
    assert ongoing.unknown_state_filters == ("NoSuchState",)
    client = RawClient(bootstrap)
    try:
        by_producer = client.request(
            66, 0, ListV0(producer_id_filters=(ids["done-txn"].producer_id,))
        )
    finally:
        client.close()
    assert [s.transactional_id for s in by_producer.transaction_states] == ["done-txn"]
    assert long_running.transaction_states == ()
    assert [s.transactional_id for s in recent.transaction_states] == ["open-txn"]

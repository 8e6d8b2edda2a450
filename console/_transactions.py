"""Transactions in flight, read with ListTransactions and DescribeTransactions (which
aiokafka does not send) from every broker of the cluster: each broker answers for the
transactional ids it coordinates."""

from __future__ import annotations

import time
from typing import Any

from kio.schema.describe_transactions.v0.request import DescribeTransactionsRequest
from kio.schema.errors import ErrorCode
from kio.schema.list_transactions.v0.request import ListTransactionsRequest
from kio.schema.metadata.v4.request import MetadataRequest

from headrace.base.kafka_admin import KioAdmin
from headrace.base.millis import duration_millis, epoch_millis

# Transactions that have begun and not finished: what "in flight" means on the page.
OPEN_STATES = ("Ongoing", "PrepareCommit", "PrepareAbort", "PrepareEpochFence")


class TransactionsReader(KioAdmin):
    async def in_flight(self) -> list[dict[str, Any]]:
        """Every open transaction: id, state, producer, its partitions, start and age."""
        metadata = await self._any(MetadataRequest(topics=(), allow_auto_topic_creation=False))
        now = time.time()
        found = []
        for broker in metadata.brokers:
            connection = await self._connect((broker.host, broker.port))
            listed = await connection.request(ListTransactionsRequest(state_filters=OPEN_STATES))
            if listed.error_code != ErrorCode.none or not listed.transaction_states:
                continue
            ids = tuple(t.transactional_id for t in listed.transaction_states)
            described = await connection.request(DescribeTransactionsRequest(transactional_ids=ids))
            for txn in described.transaction_states:
                if txn.error_code != ErrorCode.none:
                    continue  # finished between the two requests
                started = txn.transaction_start_time.timestamp()
                found.append(
                    {
                        "transactional_id": txn.transactional_id,
                        "state": txn.transaction_state,
                        "producer_id": txn.producer_id,
                        "producer_epoch": txn.producer_epoch,
                        "coordinator": broker.node_id,
                        "timeout_ms": duration_millis(txn.transaction_timeout),
                        "started_ms": epoch_millis(txn.transaction_start_time),
                        "age_s": max(0.0, now - started),
                        "partitions": [f"{t.topic}-{p}" for t in txn.topics for p in t.partitions],
                    }
                )
        return sorted(found, key=lambda t: -t["age_s"])

"""AddPartitionsToTxn (key 24, v0-2): partitions a transaction is about to write to.

Every partition must exist; if one does not, it gets UNKNOWN_TOPIC_OR_PARTITION, the
others OPERATION_NOT_ATTEMPTED, and nothing is added (as Kafka answers). Otherwise the
coordinator adds them all, and any refusal is every partition's error. v2 answers a
fenced producer PRODUCER_FENCED.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from headrace.transactions import TopicPartition, TransactionError

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..security import Operation, ResourceType
from ._authz import topic_code
from ._txn import txn_error_code

API_KEY = 24


async def handle(state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    body = request.body
    wanted = [TopicPartition(t.name, p) for t in body.v3_and_below_topics for p in t.partitions]
    codes = {tp: ErrorCode.none for tp in wanted}
    missing = {tp for tp in wanted if state.partition_log(tp.topic, tp.partition) is None}
    refused = {
        tp: code
        for tp in wanted
        if (code := topic_code(request, Operation.WRITE, tp.topic)) is not None
    }
    if not request.session.allows(
        Operation.WRITE, ResourceType.TRANSACTIONAL_ID, body.v3_and_below_transactional_id
    ):
        codes = dict.fromkeys(wanted, ErrorCode.transactional_id_authorization_failed)
    elif refused:
        codes = {tp: refused.get(tp, ErrorCode.operation_not_attempted) for tp in wanted}
    elif missing:
        codes = {
            tp: ErrorCode.unknown_topic_or_partition
            if tp in missing
            else ErrorCode.operation_not_attempted
            for tp in wanted
        }
    else:
        try:
            await state.txn.coordinator.add_partitions(
                body.v3_and_below_transactional_id,
                body.v3_and_below_producer_id,
                body.v3_and_below_producer_epoch,
                wanted,
            )
        except TransactionError as exc:
            code = txn_error_code(exc, fenced_allowed=request.api_version >= 2)
            codes = dict.fromkeys(wanted, code)
    results = tuple(
        make(
            m.AddPartitionsToTxnTopicResult,
            name=t.name,
            results_by_partition=tuple(
                make(
                    m.AddPartitionsToTxnPartitionResult,
                    partition_index=p,
                    partition_error_code=codes[TopicPartition(t.name, p)],
                )
                for p in t.partitions
            ),
        )
        for t in body.v3_and_below_topics
    )
    return make(
        m.AddPartitionsToTxnResponse,
        throttle_time=NO_THROTTLE,
        results_by_topic_v3_and_below=results,
    )


ROUTE = Route(API_KEY, 0, 2, handle)

"""WriteTxnMarkers (key 27, v1): write commit or abort markers for given producers on
given partitions.

In Kafka the transaction coordinator sends this to partition leaders; here the
coordinator writes its markers in-process, so this request comes from an
administrator: ``kafka-transactions abort`` (the admin client's ``abortTransaction``)
ends a hanging transaction, one that no coordinator will ever end (say, written by a
broker that did not yet verify transactional produces), found with DescribeProducers.

Steps, as Kafka's KafkaApis answers:
1. CLUSTER_ACTION on the cluster, else every partition of every marker gets
   CLUSTER_AUTHORIZATION_FAILED and nothing is written;
2. per marker, in request order, each partition's marker goes through the path the
   coordinator's own markers take (``TxnService.write_markers_each``): checked against
   the partition's producer state (an older producer epoch is INVALID_PRODUCER_EPOCH,
   an older coordinator epoch TRANSACTION_COORDINATOR_FENCED), appended, its
   transaction ended there (the last stable offset moves past it; an abort is indexed
   for read_committed fetches), then fsynced; a partition that does not exist is
   UNKNOWN_TOPIC_OR_PARTITION;
3. answer once every marker is durable, each partition with its own code.
A marker for a producer with no open transaction at a partition is written and ends
nothing, as in Kafka. Version 0 is gone from Kafka 4.0's clients; version 2 adds the
transaction version of KIP-890's second part, which this broker does not speak.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from headrace.transactions import TopicPartition, TransactionError, TxnMarkers

from .._entities import make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..security import Operation
from ..storage import StorageError
from ._authz import cluster_code
from ._codes import error_code_for

API_KEY = 27


def _result(m: Any, marker: Any, codes: dict[TopicPartition, ErrorCode]) -> Any:
    return make(
        m.WritableTxnMarkerResult,
        producer_id=marker.producer_id,
        topics=tuple(
            make(
                m.WritableTxnMarkerTopicResult,
                name=t.name,
                partitions=tuple(
                    make(
                        m.WritableTxnMarkerPartitionResult,
                        partition_index=p,
                        error_code=codes[TopicPartition(t.name, p)],
                    )
                    for p in t.partition_indexes
                ),
            )
            for t in marker.topics
        ),
    )


def _code(error: TransactionError | StorageError | None) -> ErrorCode:
    if error is None:
        return ErrorCode.none
    if isinstance(error, TransactionError):
        return ErrorCode(error.error_code)
    return error_code_for(error)


async def handle(state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    refused = cluster_code(request, Operation.CLUSTER_ACTION)
    results = []
    for marker in request.body.markers:
        wanted = frozenset(
            TopicPartition(t.name, p) for t in marker.topics for p in t.partition_indexes
        )
        if refused is not None:
            codes = dict.fromkeys(wanted, refused)
        else:
            written = await state.txn.write_markers_each(
                TxnMarkers(
                    marker.producer_id,
                    marker.producer_epoch,
                    marker.coordinator_epoch,
                    marker.transaction_result,
                    wanted,
                )
            )
            codes = {tp: _code(error) for tp, error in written.items()}
        results.append(_result(m, marker, codes))
    return make(m.WriteTxnMarkersResponse, markers=tuple(results))


ROUTE = Route(API_KEY, 1, 1, handle)

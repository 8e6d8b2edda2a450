"""DescribeProducers (key 61): the producers a partition knows, and each one's open
transaction, if any.

This is what ``kafka-transactions describe-producers`` prints and where ``kafka-
transactions find-hanging`` starts: a producer whose current transaction started
long ago, and whose producer id no coordinator lists as ongoing with this partition
(ListTransactions, DescribeTransactions), holds a hanging transaction, which
``kafka-transactions abort`` then ends with WriteTxnMarkers.

Per partition, as Kafka's KafkaApis and ReplicaManager answer: READ on the topic
(else TOPIC_AUTHORIZATION_FAILED), the partition must exist (else
UNKNOWN_TOPIC_OR_PARTITION); then every producer of its producer state with its epoch,
last sequence, last timestamp, the coordinator epoch of its last marker and the first
offset of its open transaction (-1 for none, as Kafka's wire says). Reading a
partition loads its producer state if nothing has yet, as a read_committed fetch does.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..security import Operation
from ._authz import topic_code

API_KEY = 61


def _partition(state: BrokerState, m: Any, topic: str, index: int, refused: Any) -> Any:
    log = None if refused is not None else state.partition_log(topic, index)
    if log is None:
        return make(
            m.PartitionResponse,
            partition_index=index,
            error_code=refused or ErrorCode.unknown_topic_or_partition,
            error_message=None,
            active_producers=(),
        )
    producers = state.txn.partitions.get(log).producers
    return make(
        m.PartitionResponse,
        partition_index=index,
        error_code=ErrorCode.none,
        error_message=None,
        active_producers=tuple(
            make(
                m.ProducerState,
                producer_id=entry.producer_id,
                producer_epoch=entry.epoch,
                last_sequence=entry.last_seq,
                last_timestamp=entry.last_timestamp,
                coordinator_epoch=entry.coordinator_epoch,
                current_txn_start_offset=entry.txn_first_offset,
            )
            for entry in sorted(producers.entries(), key=lambda e: e.producer_id)
        ),
    )


async def handle(state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    topics = tuple(
        make(
            m.TopicResponse,
            name=t.name,
            partitions=tuple(
                _partition(state, m, t.name, index, refused) for index in t.partition_indexes
            ),
        )
        for t in request.body.topics
        for refused in [topic_code(request, Operation.READ, t.name)]
    )
    return make(m.DescribeProducersResponse, throttle_time=NO_THROTTLE, topics=topics)


ROUTE = Route(API_KEY, 0, 0, handle)

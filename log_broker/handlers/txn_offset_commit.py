"""TxnOffsetCommit (key 28, v0-5): a group's offsets, committed inside a transaction.

Order of work: check the producer is the transactional id's current one (a zombie is
refused with INVALID_PRODUCER_EPOCH or INVALID_PRODUCER_ID_MAPPING); per partition, an
unknown topic or partition gets UNKNOWN_TOPIC_OR_PARTITION; the rest go to the group
coordinator as one transactional batch of that producer, answered once durable. They
become the group's committed offsets only when the transaction's commit marker reaches
the group's ``__consumer_offsets`` partition.

From v3 (KIP-447) the request also carries the consumer's group metadata: generation,
member id and group instance id. The coordinator checks them as it checks a plain
OffsetCommit's, so a producer whose consumer has left the group's current generation
(its session expired, or a rebalance gave its partitions to another member) is refused
with ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID, an abortable error for
the client. Versions 0-2, and v3+ with generation -1 and no member id (a producer given
no consumer group metadata), are fenced by producer epoch alone, as in Kafka.

v4 only lets the broker answer TRANSACTION_ABORTABLE (KIP-890), which this one never
does. v5 implies AddOffsetsToTxn only under transaction version 2, which this broker
does not advertise (no ``transaction.version`` feature), so clients still send
AddOffsetsToTxn first: v4 and v5 are served exactly as v3.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from headrace.transactions import TransactionError

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..groups import GroupError, NewOffset, TopicPartition
from ..security import Operation
from ._authz import require_group, require_transactional_id, topic_code
from ._txn import txn_error_code

API_KEY = 28


async def handle(state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    body = request.body
    codes: dict[TopicPartition, ErrorCode] = {}
    offsets: dict[TopicPartition, NewOffset] = {}
    for t in body.topics:
        for p in t.partitions:
            tp = TopicPartition(t.name, p.partition_index)
            if (refused := topic_code(request, Operation.READ, t.name)) is not None:
                codes[tp] = refused
            elif state.partition_log(t.name, p.partition_index) is None:
                codes[tp] = ErrorCode.unknown_topic_or_partition
            else:
                offsets[tp] = NewOffset(
                    p.committed_offset,
                    getattr(p, "committed_leader_epoch", -1),
                    p.committed_metadata or "",
                )
    common = ErrorCode.none
    try:
        require_transactional_id(request, body.transactional_id)
        require_group(request, Operation.READ, body.group_id)
        state.txn.coordinator.check_producer(
            body.transactional_id, body.producer_id, body.producer_epoch
        )
        await state.groups.txn_commit(
            body.group_id,
            body.producer_id,
            body.producer_epoch,
            offsets,
            generation=getattr(body, "generation_id", -1),
            member_id=getattr(body, "member_id", ""),
            group_instance_id=getattr(body, "group_instance_id", None),
        )
    except TransactionError as exc:
        common = txn_error_code(exc, fenced_allowed=False)
    except GroupError as exc:
        common = ErrorCode(exc.error_code)
    for tp in offsets:
        codes[tp] = common
    topics = tuple(
        make(
            m.TxnOffsetCommitResponseTopic,
            name=t.name,
            partitions=tuple(
                make(
                    m.TxnOffsetCommitResponsePartition,
                    partition_index=p.partition_index,
                    error_code=codes[TopicPartition(t.name, p.partition_index)],
                )
                for p in t.partitions
            ),
        )
        for t in body.topics
    )
    return make(m.TxnOffsetCommitResponse, throttle_time=NO_THROTTLE, topics=topics)


ROUTE = Route(API_KEY, 0, 5, handle)

"""AddOffsetsToTxn (key 25, v0-2): the transaction will commit offsets of a group.

The group's ``__consumer_offsets`` partition joins the transaction, so the commit or
abort marker reaches it and decides the offsets TxnOffsetCommit staged there.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from headrace.transactions import TopicPartition, TransactionError

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..groups import OFFSETS_TOPIC, partition_for
from ..security import Operation, ResourceType
from ._authz import GroupAuthorizationError, require_transactional_id
from ._txn import txn_error_code

API_KEY = 25


async def handle(state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    body = request.body
    topic = state.logs.topics().get(OFFSETS_TOPIC)
    if not body.group_id:
        code = ErrorCode.invalid_group_id
    elif topic is None:
        code = ErrorCode.coordinator_not_available
    else:
        offsets = TopicPartition(OFFSETS_TOPIC, partition_for(body.group_id, len(topic.partitions)))
        try:
            require_transactional_id(request, body.transactional_id)
            if not request.session.allows(Operation.READ, ResourceType.GROUP, body.group_id):
                raise GroupAuthorizationError(f"may not READ group {body.group_id}")
            await state.txn.coordinator.add_partitions(
                body.transactional_id, body.producer_id, body.producer_epoch, [offsets]
            )
            code = ErrorCode.none
        except GroupAuthorizationError as exc:
            code = ErrorCode(exc.error_code)
        except TransactionError as exc:
            code = txn_error_code(exc, fenced_allowed=request.api_version >= 2)
    return make(m.AddOffsetsToTxnResponse, throttle_time=NO_THROTTLE, error_code=code)


ROUTE = Route(API_KEY, 0, 2, handle)

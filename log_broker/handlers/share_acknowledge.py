"""ShareAcknowledge (key 79): acknowledge acquired records without fetching (KIP-932).

1. Check the share-session epoch and move the session on; an acknowledgement cannot
   open a session (epoch 0 is INVALID_SHARE_SESSION_EPOCH).
2. Apply the acknowledgements and persist them before answering; each partition gets
   its own error.
3. Epoch -1 closes the session afterwards, releasing the member's remaining locks.
"""

from __future__ import annotations

import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..groups import GroupError
from ..security import Operation
from ..share import ShareError
from ..share._service import AckBatch
from ..share._sessions import CLOSE_EPOCH, OPEN_EPOCH
from ._authz import require_group, topic_code
from ._groups import code_of as group_code_of
from ._share import ack_batches, answerer, code_of, message_of, share_service, topic_names

API_KEY = 79


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    m = response_module(API_KEY, request.api_version)
    service = share_service(state)
    group_id, member_id, epoch = body.group_id or "", body.member_id or "", body.share_session_epoch
    answer = answerer(m.ShareAcknowledgeResponse, service, group_id)
    try:
        require_group(request, Operation.READ, group_id)
    except GroupError as exc:
        return answer(group_code_of(exc), str(exc))
    if epoch == OPEN_EPOCH:
        return answer(
            ErrorCode.invalid_share_session_epoch, "acknowledgements cannot open a share session"
        )
    try:
        service.coordinator.session(group_id, member_id, epoch)
    except ShareError as exc:
        return answer(code_of(exc), str(exc))
    names = topic_names(service, [t.topic_id for t in body.topics])
    results: dict[tuple[uuid.UUID, int], tuple[ErrorCode, str | None]] = {}
    acks: dict[tuple[str, int], list[AckBatch]] = {}
    ids: dict[tuple[str, int], uuid.UUID] = {}
    for topic in body.topics:
        name = names.get(topic.topic_id)
        for p in topic.partitions:
            where = (topic.topic_id, p.partition_index)
            if name is None:
                results[where] = (ErrorCode.unknown_topic_id, None)
            elif topic_code(request, Operation.READ, name) is not None:
                results[where] = (ErrorCode.topic_authorization_failed, None)
            else:
                tp = (name, p.partition_index)
                ids[tp] = topic.topic_id
                acks[tp] = ack_batches(p.acknowledgement_batches)
    if acks:
        for tp, error in (await service.acknowledge(group_id, member_id, acks)).items():
            results[(ids[tp], tp[1])] = (code_of(error), message_of(error))
    if epoch == CLOSE_EPOCH:
        service.close_session(group_id, member_id)
    by_topic: dict[uuid.UUID, list[Any]] = {}
    for (topic_id, index), (code, message) in results.items():
        by_topic.setdefault(topic_id, []).append(
            make(
                m.PartitionData,
                partition_index=index,
                error_code=code,
                error_message=message,
                current_leader=make(m.LeaderIdAndEpoch, leader_id=-1, leader_epoch=-1),
            )
        )
    return answer(
        ErrorCode.none,
        None,
        tuple(
            make(m.ShareAcknowledgeTopicResponse, topic_id=t, partitions=tuple(ps))
            for t, ps in by_topic.items()
        ),
    )


ROUTE = Route(API_KEY, 1, 2, handle)

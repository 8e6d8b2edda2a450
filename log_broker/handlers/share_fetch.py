"""ShareFetch (key 78): acquire records for a share-group member, acknowledging earlier
ones on the way (KIP-932).

Order of work for one request:
1. Check the share-session epoch and move the session on (``log_broker.share._sessions``)
   before anything else, so a member's requests take effect in the order they came.
   Epoch 0 opens a session with the request's partitions; later requests add theirs and
   drop the forgotten ones.
2. Apply the piggybacked acknowledgements (not allowed when opening a session) and
   persist them; each partition reports its own acknowledgement error.
3. Epoch -1 closes the session: the member's locks are released and nothing is fetched.
4. Otherwise acquire up to ``max_records`` records over the session's partitions and
   return the batches holding them with the acquired ranges. If none could be acquired,
   wait for an append, a release or a lock expiry on those partitions (or
   ``max_wait``), then try again.
ShareFetch v2 adds the record-limit acquire mode (never more than ``max_records``, even
if that splits a batch) and ``is_renew_ack``: a request that renews locks fetches
nothing. Records go up to the high watermark under read_uncommitted (KIP-932's default
``share.isolation.level``); under read_committed up to the last stable offset, records
of aborted transactions archived without delivery.
"""

from __future__ import annotations

import time
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
from ..share._service import AckBatch, Delivery
from ..share._sessions import CLOSE_EPOCH, OPEN_EPOCH
from ._authz import require_group, topic_code
from ._groups import code_of as group_code_of
from ._share import ack_batches, answerer, code_of, message_of, share_service, topic_names

API_KEY = 78
RECORD_LIMIT = 1  # share_acquire_mode: 0 batch-optimized, 1 record-limit
TopicPartition = tuple[str, int]


async def handle(state: BrokerState, request: Request) -> Any:
    body = request.body
    m = response_module(API_KEY, request.api_version)
    service = share_service(state)
    group_id, member_id, epoch = body.group_id or "", body.member_id or "", body.share_session_epoch
    answer = answerer(m.ShareFetchResponse, service, group_id)
    try:
        require_group(request, Operation.READ, group_id)
    except GroupError as exc:
        return answer(group_code_of(exc), str(exc))
    names = topic_names(
        service,
        [t.topic_id for t in body.topics] + [t.topic_id for t in body.forgotten_topics_data],
    )
    try:
        session = service.coordinator.session(group_id, member_id, epoch)
    except ShareError as exc:
        return answer(code_of(exc), str(exc))

    # Per partition: (topic id, index) -> fetch error, acknowledgement error.
    errors: dict[tuple[uuid.UUID, int], ErrorCode] = {}
    ack_errors: dict[tuple[uuid.UUID, int], tuple[ErrorCode, str | None]] = {}
    acks: dict[TopicPartition, list[AckBatch]] = {}
    ids: dict[TopicPartition, uuid.UUID] = {}
    if epoch == OPEN_EPOCH:
        session.partitions.clear()
    for topic in body.topics:
        name = names.get(topic.topic_id)
        for p in topic.partitions:
            where = (topic.topic_id, p.partition_index)
            if name is None or service.partition_count(name) is None:
                errors[where] = ErrorCode.unknown_topic_id
                continue
            if topic_code(request, Operation.READ, name) is not None:
                errors[where] = ErrorCode.topic_authorization_failed
                continue
            if not 0 <= p.partition_index < (service.partition_count(name) or 0):
                errors[where] = ErrorCode.unknown_topic_or_partition
                continue
            tp = (name, p.partition_index)
            ids[tp] = topic.topic_id
            if epoch != CLOSE_EPOCH:
                session.partitions.add(tp)
            if p.acknowledgement_batches:
                if epoch == OPEN_EPOCH:
                    ack_errors[where] = (
                        ErrorCode.invalid_share_session_epoch,
                        "acknowledgements cannot open a share session",
                    )
                    continue
                acks[tp] = ack_batches(p.acknowledgement_batches)
    for forgotten in body.forgotten_topics_data:
        name = names.get(forgotten.topic_id)
        if name is not None:
            for index in forgotten.partitions:
                session.partitions.discard((name, index))

    if acks:
        for tp, error in (await service.acknowledge(group_id, member_id, acks)).items():
            ack_errors[(ids[tp], tp[1])] = (code_of(error), message_of(error))

    deliveries: dict[TopicPartition, Delivery] = {}
    if epoch == CLOSE_EPOCH:
        service.close_session(group_id, member_id)
    elif body.max_records > 0 and not getattr(body, "is_renew_ack", False):
        record_limit = getattr(body, "share_acquire_mode", 0) == RECORD_LIMIT
        wanted = sorted(session.partitions)
        cap = state.config.fetch_max_bytes
        max_bytes = min(body.max_bytes, cap) if body.max_bytes > 0 else cap
        deadline = time.monotonic() + body.max_wait.total_seconds()
        while True:
            deliveries = service.acquire(
                group_id, member_id, wanted, body.max_records, max_bytes, record_limit=record_limit
            )
            left = deadline - time.monotonic()
            if deliveries or ack_errors or errors or left <= 0 or not wanted:
                break
            await service.wait_for_records(wanted, left)
            if service.coordinator.sessions.get(group_id, member_id) is not session:
                break  # the session was closed or replaced while waiting

    by_topic: dict[uuid.UUID, list[Any]] = {}
    reported: set[tuple[uuid.UUID, int]] = set()
    for tp, delivery in deliveries.items():
        topic_id = ids.get(tp) or _topic_id(service, tp[0])
        if topic_id is None:
            continue
        where = (topic_id, tp[1])
        reported.add(where)
        by_topic.setdefault(topic_id, []).append(
            _partition(m, tp[1], ErrorCode.none, ack_errors.get(where), delivery)
        )
    for where in set(errors) | set(ack_errors):
        if where in reported:
            continue
        by_topic.setdefault(where[0], []).append(
            _partition(m, where[1], errors.get(where, ErrorCode.none), ack_errors.get(where), None)
        )
    topics = tuple(
        make(m.ShareFetchableTopicResponse, topic_id=topic_id, partitions=tuple(partitions))
        for topic_id, partitions in by_topic.items()
    )
    return answer(ErrorCode.none, None, topics)


def _topic_id(service: Any, name: str) -> uuid.UUID | None:
    topic = service.topic(name)
    return None if topic is None else topic.topic_id


def _partition(
    m: Any,
    index: int,
    error: ErrorCode,
    ack: tuple[ErrorCode, str | None] | None,
    delivery: Delivery | None,
) -> Any:
    ack_code, ack_message = ack or (ErrorCode.none, None)
    return make(
        m.PartitionData,
        partition_index=index,
        error_code=error,
        error_message=None,
        acknowledge_error_code=ack_code,
        acknowledge_error_message=ack_message,
        current_leader=make(m.LeaderIdAndEpoch, leader_id=-1, leader_epoch=-1),
        records=b"" if delivery is None else delivery.records,
        acquired_records=()
        if delivery is None
        else tuple(
            make(
                m.AcquiredRecords,
                first_offset=r.first_offset,
                last_offset=r.last_offset,
                delivery_count=r.delivery_count,
            )
            for r in delivery.acquired
        ),
    )


ROUTE = Route(API_KEY, 1, 2, handle)

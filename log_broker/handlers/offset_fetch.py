"""OffsetFetch (key 9): groups' committed offsets; -1 where nothing is committed.

The versions, as Kafka's OffsetFetchRequest.json has them:

- v1-v5: one group, its topics by name; from v2 a null topic list asks for every
  offset the group has, and a group-level error has a field of its own;
- v6: the flexible encoding;
- v7: ``require_stable``;
- v8: several groups in one request, each answered with its own error;
- v9: a consumer-protocol member's id and epoch (KIP-848), checked as Kafka's
  coordinator checks them;
- v10: topics by id instead of by name.

For each group, in order (Kafka's ``KafkaApis`` then its group coordinator):

1. an empty group id is INVALID_GROUP_ID; a principal without DESCRIBE on the group
   gets GROUP_AUTHORIZATION_FAILED;
2. v9+: a member id or epoch, when given for a group of the consumer protocol, must
   name a member (else UNKNOWN_MEMBER_ID) at its current epoch (else
   STALE_MEMBER_EPOCH); a classic group, or none at all, is not checked;
3. each partition asked for: TOPIC_AUTHORIZATION_FAILED without DESCRIBE on its topic
   (v10: UNKNOWN_TOPIC_ID for an id no topic has); with ``require_stable``,
   UNSTABLE_OFFSET_COMMIT while an open transaction has staged an offset for it in
   this group (TxnOffsetCommit written, its marker not yet), so a consumer starting
   under exactly-once retries rather than reading an offset about to change;
   otherwise the committed offset, or -1;
4. all partitions (a null topic list): the committed ones, of the topics the
   principal may describe, step 3's stability rule applied to each.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..groups import OffsetValue, TopicPartition
from ..security import Operation, ResourceType
from ._authz import topic_code

API_KEY = 9
BATCHED = 8  # the first version with a list of groups
TOPIC_IDS = 10  # the first version naming topics by id


@dataclass(frozen=True, slots=True)
class _Asked:
    """One topic of a request: its name (None for an id no topic has) and, v10, id."""

    name: str | None
    topic_id: uuid.UUID | None
    partitions: Sequence[int]


@dataclass(frozen=True, slots=True)
class _Answer:
    """One partition's answer; ``value`` None is offset -1."""

    partition: int
    value: OffsetValue | None
    error: ErrorCode


_NOT_FOUND = (-1, -1, "")


async def handle(state: BrokerState, request: Request) -> Any:
    if request.api_version < BATCHED:
        return _one_group(state, request)
    return _batched(state, request)


def _one_group(state: BrokerState, request: Request) -> Any:
    """v1-v7: one group, its error at the top level (v2+)."""
    body = request.body
    m = response_module(API_KEY, request.api_version)
    asked = None if body.topics is None else [_by_name(t) for t in body.topics]
    error, topics = _fetch_group(
        state,
        request,
        body.group_id,
        asked,
        require_stable=getattr(body, "require_stable", False),
        member=None,
    )
    return make(
        m.OffsetFetchResponse,
        throttle_time=NO_THROTTLE,
        topics=tuple(
            make(
                m.OffsetFetchResponseTopic,
                name=topic.name,
                partitions=tuple(_partition(m.OffsetFetchResponsePartition, a) for a in answers),
            )
            for topic, answers in topics
        ),
        error_code=error,
    )


def _batched(state: BrokerState, request: Request) -> Any:
    """v8+: each group answered with its own error; v10 names topics by id."""
    body = request.body
    version = request.api_version
    m = response_module(API_KEY, version)
    names = (
        {t.topic_id: name for name, t in state.logs.topics().items()}
        if version >= TOPIC_IDS
        else {}
    )
    groups = []
    for group in body.groups:
        if group.topics is None:
            asked = None
        elif version >= TOPIC_IDS:
            asked = [
                _Asked(names.get(t.topic_id), t.topic_id, t.partition_indexes) for t in group.topics
            ]
        else:
            asked = [_by_name(t) for t in group.topics]
        error, topics = _fetch_group(
            state,
            request,
            group.group_id,
            asked,
            require_stable=body.require_stable,
            member=(getattr(group, "member_id", None), getattr(group, "member_epoch", -1)),
        )
        if version >= TOPIC_IDS:  # a committed offset of a topic since deleted has no id
            topics = [(t, a) for t, a in topics if t.topic_id is not None]
        groups.append(
            make(
                m.OffsetFetchResponseGroup,
                group_id=group.group_id,
                topics=tuple(
                    make(
                        m.OffsetFetchResponseTopics,
                        name=topic.name or "",
                        topic_id=topic.topic_id,
                        partitions=tuple(
                            _partition(m.OffsetFetchResponsePartitions, a) for a in answers
                        ),
                    )
                    for topic, answers in topics
                ),
                error_code=error,
            )
        )
    return make(m.OffsetFetchResponse, throttle_time=NO_THROTTLE, groups=tuple(groups))


def _by_name(topic: Any) -> _Asked:
    return _Asked(topic.name, None, topic.partition_indexes)


def _partition(cls: Any, answer: _Answer) -> Any:
    offset, epoch, metadata = (
        _NOT_FOUND
        if answer.value is None
        else (answer.value.offset, answer.value.leader_epoch, answer.value.metadata)
    )
    return make(
        cls,
        partition_index=answer.partition,
        committed_offset=offset,
        committed_leader_epoch=epoch,
        metadata=metadata,
        error_code=answer.error,
    )


def _fetch_group(
    state: BrokerState,
    request: Request,
    group_id: str,
    asked: list[_Asked] | None,
    *,
    require_stable: bool,
    member: tuple[str | None, int] | None,
) -> tuple[ErrorCode, list[tuple[_Asked, list[_Answer]]]]:
    """One group's error and, per topic, its partitions' answers (steps 1-4)."""
    if not group_id:
        return ErrorCode.invalid_group_id, []
    if not request.session.allows(Operation.DESCRIBE, ResourceType.GROUP, group_id):
        return ErrorCode.group_authorization_failed, []
    if member is not None:
        refused = _member_error(state, group_id, *member)
        if refused is not None:
            return refused, []
    unstable = state.groups.coordinator.unstable_offsets(group_id) if require_stable else set()
    if asked is None:
        return ErrorCode.none, _all_offsets(state, request, group_id, unstable)
    wanted = [TopicPartition(t.name, p) for t in asked if t.name is not None for p in t.partitions]
    found = state.groups.fetch(group_id, wanted)
    topics = []
    for topic in asked:
        refused = (
            ErrorCode.unknown_topic_id
            if topic.name is None
            else topic_code(request, Operation.DESCRIBE, topic.name)
        )
        answers = []
        for p in topic.partitions:
            tp = TopicPartition(topic.name or "", p)
            if refused is not None:
                answers.append(_Answer(p, None, refused))
            elif tp in unstable:
                answers.append(_Answer(p, None, ErrorCode.unstable_offset_commit))
            else:
                answers.append(_Answer(p, found.get(tp), ErrorCode.none))
        topics.append((topic, answers))
    return ErrorCode.none, topics


def _all_offsets(
    state: BrokerState, request: Request, group_id: str, unstable: set[TopicPartition]
) -> list[tuple[_Asked, list[_Answer]]]:
    found = state.groups.fetch(group_id, None)
    ids = {name: t.topic_id for name, t in state.logs.topics().items()}
    listed: Iterable[TopicPartition] = sorted(found)
    topics = []
    for name, tps in groupby(listed, key=lambda tp: tp.topic):
        if topic_code(request, Operation.DESCRIBE, name) is not None:
            continue  # only topics the principal may describe
        answers = [
            _Answer(tp.partition, None, ErrorCode.unstable_offset_commit)
            if tp in unstable
            else _Answer(tp.partition, found[tp], ErrorCode.none)
            for tp in tps
        ]
        partitions = [a.partition for a in answers]
        topics.append((_Asked(name, ids.get(name), partitions), answers))
    return topics


def _member_error(
    state: BrokerState, group_id: str, member_id: str | None, member_epoch: int
) -> ErrorCode | None:
    """Step 2: Kafka's ``ConsumerGroup.validateOffsetFetch``. No member id and no epoch
    (an admin client, a classic consumer) is always accepted."""
    if member_id is None and member_epoch < 0:
        return None
    group = state.groups.coordinator.consumer.get(group_id)
    if group is None:
        return None
    found = group.members.get(member_id or "")
    if found is None:
        return ErrorCode.unknown_member_id
    if found.epoch != member_epoch:
        return ErrorCode.stale_member_epoch
    return None


ROUTE = Route(API_KEY, 1, 10, handle)

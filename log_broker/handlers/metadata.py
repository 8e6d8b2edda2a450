"""Metadata (key 3): this one broker leads every partition of every topic.

Topics missing from a request are created when the request allows it (always before v4,
by ``allow_auto_topic_creation`` from v4) and ``auto.create.topics.enable`` is on.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .. import storage
from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import INTERNAL_TOPICS, BrokerState
from .._wire import Request, response_module
from ..security import Operation
from ._authz import may_create_topic, topic_code
from ._codes import error_code_for

API_KEY = 3
# "No authorized operations requested", Kafka's sentinel for these fields.
_OPERATIONS_OMITTED = -(2**31)


def _topic_entry(
    m: Any,
    state: BrokerState,
    name: str,
    auto_create: bool,
    request: Request,
    asked_id: Any = None,
) -> Any:
    """``asked_id``: the topic id the request named the topic by (v12), if it did."""
    node = state.config.node_id
    if topic_code(request, Operation.DESCRIBE, name) is not None:
        # A topic asked for by id keeps its name to itself, as in Kafka: the id is no
        # secret, the name may be.
        return make(
            m.MetadataResponseTopic,
            error_code=ErrorCode.topic_authorization_failed,
            name=None if asked_id is not None else name,
            topic_id=asked_id,
            is_internal=False,
            partitions=(),
            topic_authorized_operations=_OPERATIONS_OMITTED,
        )
    auto_create = auto_create and may_create_topic(request, name)
    try:
        topic = state.topic(name, auto_create=auto_create)
    except storage.StorageError as exc:
        return make(
            m.MetadataResponseTopic,
            error_code=error_code_for(exc),
            name=name,
            topic_id=None,
            is_internal=False,
            partitions=(),
            topic_authorized_operations=_OPERATIONS_OMITTED,
        )
    if topic is None:
        return make(
            m.MetadataResponseTopic,
            error_code=ErrorCode.unknown_topic_or_partition,
            name=name,
            topic_id=None,
            is_internal=False,
            partitions=(),
            topic_authorized_operations=_OPERATIONS_OMITTED,
        )
    partitions = tuple(
        make(
            m.MetadataResponsePartition,
            error_code=ErrorCode.none,
            partition_index=index,
            leader_id=node,
            leader_epoch=0,
            replica_nodes=(node,),
            isr_nodes=(node,),
            offline_replicas=(),
        )
        for index in range(len(topic.partitions))
    )
    return make(
        m.MetadataResponseTopic,
        error_code=ErrorCode.none,
        name=name,
        topic_id=topic.topic_id,
        is_internal=name in INTERNAL_TOPICS,
        partitions=partitions,
        topic_authorized_operations=_OPERATIONS_OMITTED,
    )


def _names(state: BrokerState, topics: Any) -> list[tuple[str, Any]]:
    """The requested topics' names, each with the id it was asked for by (None when
    asked by name); from v10 a request may name a topic by id alone (the consumer
    protocols' assignments carry ids): an unknown id gives an empty name, which no
    topic has."""
    if all(t.name is not None for t in topics):
        return [(str(t.name), None) for t in topics]
    by_id: dict[object, str] = {t.topic_id: name for name, t in state.logs.topics().items()}
    return [
        (str(t.name), None)
        if t.name is not None
        else (by_id.get(getattr(t, "topic_id", None), ""), t.topic_id)
        for t in topics
    ]


async def handle(state: BrokerState, request: Request) -> Any:
    body, version = request.body, request.api_version
    m = response_module(API_KEY, version)
    if body.topics is None or (version == 0 and not body.topics):
        # Listing every topic lists only those the principal may describe.
        names = [
            (name, None)
            for name in sorted(state.logs.topics())
            if topic_code(request, Operation.DESCRIBE, name) is None
        ]
        auto_create = False
    else:
        names = _names(state, body.topics)
        auto_create = getattr(body, "allow_auto_topic_creation", True)
    # Each client is told the address of the listener it came in through.
    host, port = request.session.listener.advertised()
    broker = make(
        m.MetadataResponseBroker, node_id=state.config.node_id, host=host, port=port, rack=None
    )
    return make(
        m.MetadataResponse,
        throttle_time=NO_THROTTLE,
        brokers=(broker,),
        cluster_id=state.cluster_id,
        controller_id=state.config.node_id,
        topics=tuple(
            _topic_entry(m, state, name, auto_create, request, asked_id) for name, asked_id in names
        ),
        cluster_authorized_operations=_OPERATIONS_OMITTED,
    )


# v9 is flexible, v10 adds topic ids (share and KIP-848 consumers need them), v11 drops
# the cluster's authorized operations, v12 lets a request name topics by id alone.
ROUTE = Route(API_KEY, 0, 12, handle)

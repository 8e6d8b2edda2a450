"""ElectLeaders (key 43): what ``kafka-leader-election`` asks. This broker is the one
replica of every partition and always its leader, so there is never anything to
elect: each partition it is asked about is ELECTION_NOT_NEEDED, for a preferred
election (the leader is the preferred replica) as for an unclean one (there is a
leader), exactly as Kafka's controller answers a partition in that state
(``ReplicationControlManager.electLeaders``):

1. ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED for the request and for
   every partition it names;
2. no partitions named (null) means every partition; then, as Kafka does, only those
   that needed an election are listed, which here is none: each topic comes back
   with no partitions;
3. a topic or partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..security import Operation, ResourceType

API_KEY = 43
PREFERRED, UNCLEAN = 0, 1


def _result(m: Any, index: int, code: ErrorCode, message: str | None = None) -> Any:
    return make(m.PartitionResult, partition_id=index, error_code=code, error_message=message)


def _elect(state: BrokerState, m: Any, topic: str, index: int) -> Any:
    if state.partition_log(topic, index) is None:
        what = (
            f"topic as {topic}"
            if topic not in state.logs.topics()
            else f"partition as {topic}-{index}"
        )
        return _result(m, index, ErrorCode.unknown_topic_or_partition, f"No such {what}")
    return _result(m, index, ErrorCode.election_not_needed)


async def handle(state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    body = request.body
    named = body.topic_partitions
    error = ErrorCode.none
    if not request.session.allows(Operation.ALTER, ResourceType.CLUSTER):
        error = ErrorCode.cluster_authorization_failed
    elif getattr(body, "election_type", PREFERRED) not in (PREFERRED, UNCLEAN):
        error = ErrorCode.invalid_request
    if named is None:
        results = tuple(
            make(m.ReplicaElectionResult, topic=name, partition_result=())
            for name in ([] if error is not ErrorCode.none else sorted(state.logs.topics()))
        )
    else:
        results = tuple(
            make(
                m.ReplicaElectionResult,
                topic=t.topic,
                partition_result=tuple(
                    _elect(state, m, t.topic, index)
                    if error is ErrorCode.none
                    else _result(m, index, error)
                    for index in t.partitions
                ),
            )
            for t in named
        )
    return make(
        m.ElectLeadersResponse,
        throttle_time=NO_THROTTLE,
        error_code=error,
        replica_election_results=results,
    )


# v1 adds the election type (KIP-460) and a top-level error, v2 is flexible.
ROUTE = Route(API_KEY, 0, 2, handle)

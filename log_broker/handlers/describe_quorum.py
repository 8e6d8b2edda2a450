"""DescribeQuorum (key 55): what ``kafka-metadata-quorum`` asks. A KRaft cluster
answers with its metadata quorum: voters, observers, and how far each has replicated
the metadata log. This broker has no such quorum (it keeps its metadata itself, with
no controllers and no metadata log), so describing one could only be made up. It
answers every request with INVALID_REQUEST ("sent to an incompatible broker", in
Kafka's words for that code) and, from v2, a message that says why, which Kafka's
admin client raises as it is and its tool prints. As in Kafka, DESCRIBE on the
cluster comes first (CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..security import Operation, ResourceType

API_KEY = 55
NO_QUORUM = (
    "This broker has no KRaft quorum to describe: headrace's built-in broker is a single "
    "node that keeps its metadata itself, without controllers or a metadata log"
)


async def handle(_state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    if not request.session.allows(Operation.DESCRIBE, ResourceType.CLUSTER):
        code, message = ErrorCode.cluster_authorization_failed, None
    else:
        code, message = ErrorCode.invalid_request, NO_QUORUM
    return make(
        m.DescribeQuorumResponse,
        error_code=code,
        error_message=message,
        topics=(),
        nodes=(),
    )


# v1 adds replicas' fetch timestamps, v2 directory ids and the voters' endpoints
# (KIP-853): none of which this answer carries.
ROUTE = Route(API_KEY, 0, 2, handle)

"""DescribeCluster (key 60): the cluster id, its brokers (this one) and the
"controller", which Kafka's brokers answer with a live broker's id, as clients cannot
reach a KRaft controller through them: here, this broker's own id.

As in Kafka (``AuthHelper.computeDescribeClusterResponse``): no ACL guards the request
itself; a request for controller endpoints (v1+) sent to this broker endpoint is
MISMATCHED_ENDPOINT_TYPE, an unknown endpoint type UNSUPPORTED_ENDPOINT_TYPE (both
INVALID_REQUEST at v0); the cluster's authorized operations are 0 without DESCRIBE on
the cluster. No broker is ever fenced here.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..security import Operation, ResourceType
from ._operations import OPERATIONS_OMITTED, authorized_operations

API_KEY = 60
BROKER_ENDPOINTS = 1
CONTROLLER_ENDPOINTS = 2


def _endpoint_error(m: Any, request: Request, endpoint_type: int) -> Any:
    if endpoint_type == CONTROLLER_ENDPOINTS:
        code = ErrorCode.mismatched_endpoint_type
        message = "The request was sent to an endpoint of type BROKER, but we wanted CONTROLLER"
    else:
        code = ErrorCode.unsupported_endpoint_type
        message = f"Unsupported endpoint type {endpoint_type}"
    return make(
        m.DescribeClusterResponse,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.invalid_request if request.api_version == 0 else code,
        error_message=message,
        cluster_id="",
        brokers=(),
    )


async def handle(state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    body = request.body
    endpoint_type = getattr(body, "endpoint_type", BROKER_ENDPOINTS)
    if endpoint_type != BROKER_ENDPOINTS:
        return _endpoint_error(m, request, endpoint_type)
    operations = OPERATIONS_OMITTED
    if body.include_cluster_authorized_operations:
        operations = (
            authorized_operations(request, ResourceType.CLUSTER)
            if request.session.allows(Operation.DESCRIBE, ResourceType.CLUSTER)
            else 0
        )
    host, port = request.session.listener.advertised()
    node = state.config.node_id
    return make(
        m.DescribeClusterResponse,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        error_message=None,
        endpoint_type=BROKER_ENDPOINTS,
        cluster_id=state.cluster_id,
        controller_id=node,
        brokers=(
            make(
                m.DescribeClusterBroker,
                broker_id=node,
                host=host,
                port=port,
                rack=None,
                is_fenced=False,
            ),
        ),
        cluster_authorized_operations=operations,
    )


# v1 adds the endpoint type (KIP-919), v2 fenced brokers (KIP-1073).
ROUTE = Route(API_KEY, 0, 2, handle)

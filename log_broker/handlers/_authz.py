"""Authorization as the handlers check it: one line per check, in the handler.

``request.session.allows(operation, resource_type, name)`` answers the question; the
helpers below raise it as the error each handler already translates (a GroupError in
group handlers, a TransactionError in transaction handlers), so a refusal travels the
same path as any other error of that handler. The operations are the ones Kafka checks
for each API (``KafkaApis``), and so are the error codes.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from headrace.transactions import TransactionError

from ..groups import GroupError
from ..security import Operation, ResourceType


class GroupAuthorizationError(GroupError):
    error_code = int(ErrorCode.group_authorization_failed)


class TransactionalIdAuthorizationError(TransactionError):
    error_code = int(ErrorCode.transactional_id_authorization_failed)


class ClusterAuthorizationError(TransactionError):
    error_code = int(ErrorCode.cluster_authorization_failed)


def require_group(request: Any, operation: Operation, group_id: str) -> None:
    if not request.session.allows(operation, ResourceType.GROUP, group_id):
        raise GroupAuthorizationError(
            f"{request.session.principal} may not {operation.name} group {group_id}"
        )


def require_transactional_id(request: Any, transactional_id: str | None) -> None:
    if transactional_id is not None and not request.session.allows(
        Operation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
    ):
        raise TransactionalIdAuthorizationError(
            f"{request.session.principal} may not WRITE transactional id {transactional_id}"
        )


def require_producer_id(request: Any, transactional_id: str | None) -> None:
    """InitProducerId: WRITE on the transactional id; without one (an idempotent
    producer), IDEMPOTENT_WRITE on the cluster or WRITE on some topic, as Kafka 3.x."""
    if transactional_id is not None:
        require_transactional_id(request, transactional_id)
        return
    session = request.session
    if not (
        session.allows(Operation.IDEMPOTENT_WRITE, ResourceType.CLUSTER)
        or session.allows_any(Operation.WRITE, ResourceType.TOPIC)
    ):
        raise ClusterAuthorizationError(
            f"{session.principal} may not write idempotently: no WRITE on any topic"
        )


def topic_code(request: Any, operation: Operation, topic: str) -> ErrorCode | None:
    """TOPIC_AUTHORIZATION_FAILED when refused, else None."""
    if request.session.allows(operation, ResourceType.TOPIC, topic):
        return None
    return ErrorCode.topic_authorization_failed


def cluster_code(request: Any, operation: Operation) -> ErrorCode | None:
    """CLUSTER_AUTHORIZATION_FAILED when ``operation`` on the cluster is refused (e.g.
    CLUSTER_ACTION for WriteTxnMarkers), else None."""
    if request.session.allows(operation, ResourceType.CLUSTER):
        return None
    return ErrorCode.cluster_authorization_failed


def config_code(request: Any, operation: Operation, resource: Any) -> ErrorCode | None:
    """For Describe/AlterConfigs: a topic's configs, or the broker's (the cluster's)."""
    if resource.resource_type == _CONFIG_TOPIC:
        return topic_code(request, operation, resource.resource_name)
    if request.session.allows(operation, ResourceType.CLUSTER):
        return None
    return ErrorCode.cluster_authorization_failed


def may_create_topic(request: Any, topic: str) -> bool:
    """CREATE on the cluster, or on the topic (Kafka accepts either)."""
    allows = request.session.allows
    return bool(
        allows(Operation.CREATE, ResourceType.CLUSTER)
        or allows(Operation.CREATE, ResourceType.TOPIC, topic)
    )


_CONFIG_TOPIC = 2  # DescribeConfigs' and AlterConfigs' resource type for a topic

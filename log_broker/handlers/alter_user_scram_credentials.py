"""AlterUserScramCredentials (key 51): upsert or delete SCRAM credentials; needs ALTER on
the cluster. The client sends salt and SaltedPassword (never the password); the broker
derives and keeps only StoredKey and ServerKey. Results come one per user."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..security import Operation, ResourceType, ScramMechanism
from ..security._scram import MIN_ITERATIONS, ScramCredential

API_KEY = 51
MAX_ITERATIONS = 16384  # Kafka's upper bound: more only slows every login


async def handle(state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    body = request.body
    errors: dict[str, tuple[ErrorCode, str | None]] = {}
    allowed = request.session.allows(Operation.ALTER, ResourceType.CLUSTER)
    assert state.security is not None
    store = state.security.credentials
    for deletion in body.deletions:
        errors.setdefault(deletion.name, (ErrorCode.none, None))
        if not allowed:
            errors[deletion.name] = (ErrorCode.cluster_authorization_failed, None)
            continue
        try:
            mechanism = ScramMechanism.by_protocol_id(deletion.mechanism)
        except ValueError as exc:
            errors[deletion.name] = (ErrorCode.unsupported_sasl_mechanism, str(exc))
            continue
        if not store.delete(deletion.name, mechanism):
            errors[deletion.name] = (ErrorCode.resource_not_found,
                                     f"no {mechanism.kafka_name} credential to delete")
    for upsertion in body.upsertions:
        errors.setdefault(upsertion.name, (ErrorCode.none, None))
        if not allowed:
            errors[upsertion.name] = (ErrorCode.cluster_authorization_failed, None)
            continue
        try:
            mechanism = ScramMechanism.by_protocol_id(upsertion.mechanism)
        except ValueError as exc:
            errors[upsertion.name] = (ErrorCode.unsupported_sasl_mechanism, str(exc))
            continue
        if not MIN_ITERATIONS <= upsertion.iterations <= MAX_ITERATIONS:
            errors[upsertion.name] = (
                ErrorCode.unacceptable_credential,
                f"iterations must be within {MIN_ITERATIONS}..{MAX_ITERATIONS}")
            continue
        store.set_credential(upsertion.name, mechanism, ScramCredential.from_salted_password(
            mechanism, upsertion.salted_password, upsertion.salt, upsertion.iterations))
    return make(m.AlterUserScramCredentialsResponse, throttle_time=NO_THROTTLE,
                results=tuple(make(m.AlterUserScramCredentialsResult, user=user,
                                   error_code=code, error_message=message)
                              for user, (code, message) in errors.items()))


ROUTE = Route(API_KEY, 0, 0, handle)

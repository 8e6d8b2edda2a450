"""AlterUserScramCredentials (key 51): upsert or delete SCRAM credentials; needs ALTER on
the cluster. The client sends salt and SaltedPassword (never the password); the broker
derives and keeps only StoredKey and ServerKey. Results come one per user."""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from headrace.base.scram import MIN_ITERATIONS, ScramCredential

from .._entities import NO_THROTTLE, make
from .._router import Route
from .._state import BrokerState
from .._wire import Request, response_module
from ..security import CredentialStore, Operation, ResourceType, ScramMechanism

API_KEY = 51
MAX_ITERATIONS = 16384  # Kafka's upper bound: more only slows every login


Outcome = tuple[ErrorCode, str | None]
_DONE: Outcome = (ErrorCode.none, None)


def _delete(store: CredentialStore, deletion: Any) -> Outcome:
    mechanism = ScramMechanism.by_protocol_id(deletion.mechanism)
    if not store.delete(deletion.name, mechanism):
        return ErrorCode.resource_not_found, f"no {mechanism.kafka_name} credential to delete"
    return _DONE


def _upsert(store: CredentialStore, upsertion: Any) -> Outcome:
    mechanism = ScramMechanism.by_protocol_id(upsertion.mechanism)
    if not MIN_ITERATIONS <= upsertion.iterations <= MAX_ITERATIONS:
        return (
            ErrorCode.unacceptable_credential,
            f"iterations must be within {MIN_ITERATIONS}..{MAX_ITERATIONS}",
        )
    store.set_credential(
        upsertion.name,
        mechanism,
        ScramCredential.from_salted_password(
            mechanism, upsertion.salted_password, upsertion.salt, upsertion.iterations
        ),
    )
    return _DONE


async def handle(state: BrokerState, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    body = request.body
    allowed = request.session.allows(Operation.ALTER, ResourceType.CLUSTER)
    assert state.security is not None
    store = state.security.credentials
    # One result per user: its first failure, or success.
    outcomes: dict[str, Outcome] = {}
    changes = [*((d, _delete) for d in body.deletions), *((u, _upsert) for u in body.upsertions)]
    for item, apply in changes:
        if outcomes.get(item.name, _DONE) != _DONE:
            continue
        try:
            outcome = (
                apply(store, item) if allowed else (ErrorCode.cluster_authorization_failed, None)
            )
        except ValueError as exc:  # a mechanism number that is no SCRAM mechanism
            outcome = ErrorCode.unsupported_sasl_mechanism, str(exc)
        outcomes[item.name] = outcome
    return make(
        m.AlterUserScramCredentialsResponse,
        throttle_time=NO_THROTTLE,
        results=tuple(
            make(
                m.AlterUserScramCredentialsResult, user=user, error_code=code, error_message=message
            )
            for user, (code, message) in outcomes.items()
        ),
    )


ROUTE = Route(API_KEY, 0, 0, handle)

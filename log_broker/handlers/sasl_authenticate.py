"""SaslAuthenticate (key 36): one SASL token each way.

A failure answers SASL_AUTHENTICATION_FAILED and leaves the session failed: every later
request but ApiVersions closes the connection, so a wrong password never reaches data.

Guessing passwords is made slow and quiet for others: the token is checked off the
event loop (PLAIN derives the SCRAM key, thousands of hash rounds, and other clients'
requests must not wait for that); a failure is answered only after
``connection.failed.authentication.delay.ms``; and it is logged at most once per ten
seconds, with a count of the failures left out.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import make
from .._limits import RateLimitedLog
from .._router import Route
from .._wire import Request, response_module
from ..security import SaslError, SaslState

API_KEY = 36
log = logging.getLogger("headrace.broker")
_failures = RateLimitedLog(log)


async def handle(state: Any, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    session = request.session
    if session.sasl is None:
        return make(
            m.SaslAuthenticateResponse,
            error_code=ErrorCode.illegal_sasl_state,
            error_message="this listener does not use SASL",
            auth_bytes=b"",
        )
    try:
        reply = await asyncio.to_thread(session.sasl.step, request.body.auth_bytes)
    except SaslError as exc:
        _failures.log(
            logging.INFO,
            "sasl-failed",
            "SASL authentication failed from %s on listener %s",
            session.peer_host,
            session.listener.name,
        )
        state.metrics.authentication_failed(session.listener.name)
        await asyncio.sleep(state.config.connection_failed_authentication_delay_ms / 1000)
        return make(
            m.SaslAuthenticateResponse,
            error_code=ErrorCode.sasl_authentication_failed,
            error_message=str(exc),
            auth_bytes=b"",
        )
    if session.sasl.state is SaslState.AUTHENTICATED:
        session.completed_sasl()
    return make(
        m.SaslAuthenticateResponse, error_code=ErrorCode.none, error_message=None, auth_bytes=reply
    )


ROUTE = Route(API_KEY, 0, 2, handle)

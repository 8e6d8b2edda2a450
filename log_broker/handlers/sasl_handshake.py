"""SaslHandshake (key 17): the client names its SASL mechanism.

v1 is followed by SaslAuthenticate requests; v0 by bare SASL tokens with no request
header, which the session then expects (Kafka before 1.0 did it that way). On a
listener without SASL there is nothing to hand-shake: ILLEGAL_SASL_STATE.
"""

from __future__ import annotations

from typing import Any

from kio.schema.errors import ErrorCode

from .._entities import make
from .._router import Route
from .._wire import Request, response_module
from ..security import SaslError

API_KEY = 17


async def handle(_state: Any, request: Request) -> Any:
    m = response_module(API_KEY, request.api_version)
    sasl = request.session.sasl
    if sasl is None:
        return make(m.SaslHandshakeResponse, error_code=ErrorCode.illegal_sasl_state, mechanisms=())
    try:
        chosen = sasl.handshake(request.body.mechanism)
    except SaslError:
        return make(
            m.SaslHandshakeResponse,
            error_code=ErrorCode.illegal_sasl_state,
            mechanisms=sasl.enabled,
        )
    if not chosen:
        return make(
            m.SaslHandshakeResponse,
            error_code=ErrorCode.unsupported_sasl_mechanism,
            mechanisms=sasl.enabled,
        )
    request.session.expects_raw_token = request.api_version == 0
    return make(m.SaslHandshakeResponse, error_code=ErrorCode.none, mechanisms=sasl.enabled)


ROUTE = Route(API_KEY, 0, 1, handle)

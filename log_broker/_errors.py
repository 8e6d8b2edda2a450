"""Errors of the broker's server side.

    BrokerError                      root (headrace.base's); ``retriable`` says whether a
                                     retry can succeed
    +-- MalformedRequestError        bytes that do not decode as the request they claim
    +-- FrameTooLargeError           a size prefix beyond socket.request.max.bytes
    +-- UnsupportedRequestError      an API key or version this broker does not serve
    +-- RequestTooBroadError         more topics and partitions than the broker could hold

Storage errors have their own root in ``log_broker.storage``; handlers translate both
kinds into Kafka error codes where they answer a client.
"""

from __future__ import annotations

from headrace.base import BrokerError as BrokerError


class MalformedRequestError(BrokerError):
    pass


class FrameTooLargeError(BrokerError):
    pass


class UnsupportedRequestError(BrokerError):
    pass


class RequestTooBroadError(BrokerError):
    pass

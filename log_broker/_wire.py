"""Kafka request/response framing on top of kio's codecs. Bytes in, objects out: no I/O.

A frame on the wire is ``size:int32`` followed by ``size`` bytes. A request frame holds a
request header then the body; a response frame holds a response header then the body.
Which header version goes with which body:

1. Request header v2 (with tagged fields) when the request body's schema is flexible,
   v1 otherwise.
2. Response header v1 when the response body is flexible, v0 otherwise, except
   ApiVersions, whose response always uses header v0 so that a client that does not yet
   know the broker's versions can read it.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from functools import cache
from types import ModuleType
from typing import Any

from kio.index import load_payload_module, load_request_schema, load_response_schema
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType

from ._errors import MalformedRequestError
from ._hot_codecs import hot_decoder, hot_encoder
from ._length_guard import check_body

API_VERSIONS_KEY = 18
_KEY_AND_VERSION = struct.Struct(">hhi")


@dataclass(frozen=True, slots=True)
class Request:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: Any
    # The peer's address as the server saw it (DescribeGroups reports it per member).
    client_host: str = ""
    # Who sent it and through which listener: a log_broker.security.Session; handlers
    # ask it ``allows(operation, resource_type, name)`` before acting.
    session: Any = None


def peek_header(frame: bytes | memoryview) -> tuple[int, int, int]:
    """Return (api_key, api_version, correlation_id) without decoding the rest."""
    if len(frame) < _KEY_AND_VERSION.size:
        raise MalformedRequestError(f"request of {len(frame)} bytes is shorter than a header")
    api_key, api_version, correlation_id = _KEY_AND_VERSION.unpack_from(frame, 0)
    return api_key, api_version, correlation_id


@cache
def _request_codec(api_key: int, api_version: int) -> tuple[Any, Any, Any]:
    schema = load_request_schema(api_key, api_version)
    header = RequestHeaderV2 if schema.__flexible__ else RequestHeaderV1
    return entity_reader(header), entity_reader(schema), schema


@cache
def _response_writers(api_key: int, api_version: int) -> tuple[Any, Any, Any]:
    schema = load_response_schema(api_key, api_version)
    if schema.__flexible__ and api_key != API_VERSIONS_KEY:
        header: Any = ResponseHeaderV1
    else:
        header = ResponseHeaderV0
    return header, entity_writer(header), entity_writer(schema)


@cache
def response_module(api_key: int, api_version: int) -> ModuleType:
    """The kio module holding the response entities of one API version."""
    return load_payload_module(api_key, api_version, EntityType.response)


def decode_request(frame: bytes, client_host: str = "", session: Any = None) -> Request:
    """Decode one request frame (without its size prefix).

    Raises MalformedRequestError when the bytes do not parse as the schema the header
    names, or when bytes are left over.
    """
    api_key, api_version, _ = peek_header(frame)
    hot = hot_decoder(api_key, api_version)
    if hot is not None:
        try:
            correlation_id, client_id, body = hot(frame)
        except (ValueError, struct.error) as exc:  # UnicodeDecodeError is a ValueError
            raise MalformedRequestError(
                f"api {api_key} v{api_version}: cannot decode request: {exc}"
            ) from exc
        return Request(api_key, api_version, correlation_id, client_id, body, client_host, session)
    header_reader, body_reader, schema = _request_codec(api_key, api_version)
    try:
        header, header_size = header_reader(frame, 0)
        # kio aborts the process on a length it cannot allocate: check them all first
        check_body(schema, frame, header_size)
        body, body_size = body_reader(frame, header_size)
    except Exception as exc:  # kio raises several types for truncated or garbled input
        raise MalformedRequestError(
            f"api {api_key} v{api_version}: cannot decode request: {exc!r}"
        ) from exc
    if header_size + body_size != len(frame) and not _tolerated_tail(
        api_key, frame, header_size + body_size
    ):
        raise MalformedRequestError(
            f"api {api_key} v{api_version}: {len(frame) - header_size - body_size}"
            " trailing bytes after the request"
        )
    return Request(
        api_key, api_version, header.correlation_id, header.client_id, body, client_host, session
    )


# librdkafka (up to 2.16 at least) ends AlterUserScramCredentials with one tagged-fields
# byte too many; Kafka ignores trailing bytes, so this one empty byte is let through.
_TOLERATED_TAILS = {51: b"\0"}
METADATA = 3


def _tolerated_tail(api_key: int, frame: bytes, used: int) -> bool:
    tail = frame[used:]
    if api_key == METADATA:
        return _metadata_placeholder_tail(tail)
    return tail == _TOLERATED_TAILS.get(api_key)


def _metadata_placeholder_tail(tail: bytes) -> bool:
    """librdkafka 2.16 asks flexible Metadata (v9+) for all topics with the topic array's
    four-byte placeholder left in place: ``00 00 00 00``, then its real fields
    (allow_auto_topic_creation, include_topic_authorized_operations, no tagged fields).
    The first zero reads as a null array (all topics), as Kafka reads it; the next three
    are a complete request, and Kafka ignores the real fields left over. Only that shape
    is let through."""
    return len(tail) == 3 and tail[0] in (0, 1) and tail[1] in (0, 1) and tail[2] == 0


def encode_response(api_key: int, api_version: int, correlation_id: int, body: Any) -> bytes:
    """Encode a response frame, size prefix included."""
    hot = hot_encoder(api_key, api_version)
    if hot is not None:
        return hot(api_version, correlation_id, body)
    header_cls, write_header, write_body = _response_writers(api_key, api_version)
    buffer = io.BytesIO()
    buffer.write(b"\0\0\0\0")
    write_header(buffer, header_cls(correlation_id=correlation_id))
    write_body(buffer, body)
    out = buffer.getbuffer()
    struct.pack_into(">i", out, 0, len(out) - 4)
    del out
    return buffer.getvalue()

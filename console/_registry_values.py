"""Values written in the schema registry's wire format (magic byte 0, a 4-byte schema
id, then the Avro, Protobuf or JSON Schema payload), shown as JSON text.

The console is a client of the registry's HTTP API only: the writer's schema is asked
for by the id in each record, once, and kept (the decoder's caches are bounded). The
requests block, so the message browser decodes a page's records in a worker thread.
"""

from __future__ import annotations

import base64
import json
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any
from uuid import UUID

HEADER_SIZE = 5  # magic byte and schema id
REGISTRY_TIMEOUT_S = 5.0


def framed(data: bytes) -> bool:
    """Whether ``data`` starts the way a registry-framed value does.

    >>> framed(b"\\x00\\x00\\x00\\x00\\x01\\x02"), framed(b'{"a": 1}'), framed(b"\\x00")
    (True, False, False)
    """
    return len(data) >= HEADER_SIZE and data[0] == 0


class RegistryValues:
    """``RegistryValues(url).show(data)``: a framed value as indented JSON text;
    ``ValueError`` with the reason when the registry cannot decode it."""

    def __init__(self, url: str) -> None:
        from headrace.schema_registry import RegistryClient
        from headrace.schema_registry._generic import RegistryDecoder

        self.url = url
        self._decoder = RegistryDecoder(RegistryClient(url, timeout=REGISTRY_TIMEOUT_S))

    def show(self, data: bytes) -> str:
        from headrace.schema_registry import SchemaRegistryError

        try:
            value = self._decoder.decode(data)
        except SchemaRegistryError as error:
            raise ValueError(f"schema registry {self.url}: {error}") from None
        return json.dumps(value, indent=2, ensure_ascii=False, default=_jsonable)


def _jsonable(value: Any) -> Any:
    """What Avro and Protobuf values hold that JSON has no type for."""
    if isinstance(value, bytes):
        return "base64:" + base64.b64encode(value).decode()
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, Decimal | UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON")

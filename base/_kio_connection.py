"""One client connection that writes kio request entities and reads their responses.

For headrace's own admin clients (the groups, users and acls commands, the console),
which talk to any Kafka-protocol broker. One request at a time per connection. Which headers go with a body
follow the protocol: request header v2 and response header v1 for flexible versions,
v1 and v0 otherwise (ApiVersions aside, which these commands do not send).
"""

from __future__ import annotations

import asyncio
import io
import struct
from typing import Any

from kio.index import load_response_schema
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32

_SIZE = struct.Struct(">i")


class KioConnection:
    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        timeout_s: float,
        client_id: str,
    ) -> None:
        self._reader, self._writer = reader, writer
        self._timeout_s = timeout_s
        self._client_id = client_id
        self._correlation = 0
        self._lock = asyncio.Lock()

    async def request(self, body: Any) -> Any:
        flexible = body.__flexible__
        request_header = RequestHeaderV2 if flexible else RequestHeaderV1
        async with self._lock, asyncio.timeout(self._timeout_s):
            self._correlation += 1
            buf = io.BytesIO()
            buf.write(b"\0\0\0\0")
            entity_writer(request_header)(
                buf,
                request_header(
                    request_api_key=body.__api_key__,
                    request_api_version=body.__version__,
                    correlation_id=i32(self._correlation),
                    client_id=self._client_id,
                ),
            )
            entity_writer(type(body))(buf, body)
            frame = buf.getbuffer()
            _SIZE.pack_into(frame, 0, len(frame) - 4)
            del frame
            self._writer.write(buf.getvalue())
            await self._writer.drain()
            size = _SIZE.unpack(await self._reader.readexactly(4))[0]
            data = await self._reader.readexactly(size)
        response_header: type[ResponseHeaderV0 | ResponseHeaderV1] = (
            ResponseHeaderV1 if flexible else ResponseHeaderV0
        )
        header, used = entity_reader(response_header)(data, 0)
        if header.correlation_id != self._correlation:
            raise ConnectionError("response out of order")
        schema = load_response_schema(body.__api_key__, body.__version__)
        return entity_reader(schema)(data, used)[0]

    def close(self) -> None:
        self._writer.close()

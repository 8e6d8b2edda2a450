"""Reading registry-framed values without knowing their type in advance.

Tools that see a topic for the first time (``headrace consume``, the Delta export) have
no model class: the schema id in each record names the writer's schema, and that is
enough. Avro decodes with the writer's schema; Protobuf builds the message class from
the registered descriptor (``format=serialized``) and picks the message by the
record's message indexes; JSON Schema values are JSON after the header. Values come
out as plain Python (dicts, lists, scalars; Protobuf fields by their proto names, with
defaults filled in).
"""

from __future__ import annotations

import io
import json
import urllib.parse
from collections.abc import Callable
from typing import Any

import fastavro
import orjson
from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

from . import _wire
from ._client import RegistryClient
from ._errors import SerdeSchemaError
from ._schema import _well_known

MAX_SCHEMAS = 1000  # decoders kept: bounds what a topic of odd ids can make us keep

FORMATS = {"avro": "AVRO", "protobuf": "PROTOBUF", "json-schema": "JSON"}


class RegistryDecoder:
    """``RegistryDecoder(url).decode(data)``: any registry-framed value to Python."""

    def __init__(
        self,
        registry: str | RegistryClient,
        expect: str | None = None,
        *,
        avro_reader: str | None = None,
    ) -> None:
        """``avro_reader``: an Avro schema (JSON text) to read every Avro value as, by
        Avro's resolution rules (a field the writer lacked takes its default)."""
        self.registry = (
            registry if isinstance(registry, RegistryClient) else RegistryClient(registry)
        )
        self.avro_reader = avro_reader
        self._avro_reader = fastavro.parse_schema(json.loads(avro_reader)) if avro_reader else None
        self.expect = FORMATS.get(expect, expect) if expect else None
        self._decoders: dict[int, Callable[[memoryview], Any]] = {}
        self.schemas: dict[int, dict[str, Any]] = {}

    def decode(self, data: bytes | None) -> Any:
        if data is None:
            return None
        schema_id, payload = _wire.split(data)
        decoder = self._decoders.get(schema_id)
        if decoder is None:
            decoder = self._decoder(schema_id)
        return decoder(payload)

    def _decoder(self, schema_id: int) -> Callable[[memoryview], Any]:
        answer = self.registry.schema(schema_id)
        kind = answer.get("schemaType", "AVRO")
        if self.expect is not None and kind != self.expect:
            raise SerdeSchemaError(f"schema {schema_id} is {kind}, not {self.expect}")
        if kind == "AVRO":
            decoder = self._avro(answer)
        elif kind == "PROTOBUF":
            decoder = self._protobuf(schema_id)
        else:

            def decoder(payload: memoryview) -> Any:
                return orjson.loads(payload)

        if len(self._decoders) >= MAX_SCHEMAS:
            self._decoders.clear()
            self.schemas.clear()
        self.schemas[schema_id] = answer
        self._decoders[schema_id] = decoder
        return decoder

    def _referenced(self, answer: dict[str, Any], fmt: str | None = None) -> list[dict[str, Any]]:
        out = []
        for ref in answer.get("references", ()):
            quoted = urllib.parse.quote(ref["subject"], safe="")
            query = f"?format={fmt}" if fmt else ""
            found = self.registry.request(
                "GET", f"/subjects/{quoted}/versions/{ref['version']}{query}"
            )
            out += self._referenced(found, fmt)
            out.append(found)
        return out

    def _avro(self, answer: dict[str, Any]) -> Callable[[memoryview], Any]:
        named: dict[str, Any] = {}
        for found in self._referenced(answer):
            fastavro.parse_schema(json.loads(found["schema"]), named_schemas=named)
        writer = fastavro.parse_schema(json.loads(answer["schema"]), named_schemas=named)
        reader = self._avro_reader

        def decode(payload: memoryview) -> Any:
            return fastavro.schemaless_reader(io.BytesIO(payload), writer, reader)

        return decode

    def _protobuf(self, schema_id: int) -> Callable[[memoryview], Any]:
        answer = self.registry.schema(schema_id, "serialized")
        pool = descriptor_pool.DescriptorPool()
        added: set[str] = set()

        def add(file: descriptor_pb2.FileDescriptorProto) -> None:
            for dep in file.dependency:
                if dep not in added and dep.startswith(("google/protobuf/", "confluent/")):
                    add(_well_known(dep))
            if file.name not in added:
                pool.Add(file)
                added.add(file.name)

        for found in self._referenced(answer, "serialized"):
            add(_file(found["schema"]))
        main = _file(answer["schema"])
        add(main)
        file = pool.FindFileByName(main.name)

        def decode(payload: memoryview) -> Any:
            indexes, body = _wire.read_message_indexes(payload)
            descriptor = file.message_types_by_name[main.message_type[indexes[0]].name]
            for index in indexes[1:]:
                descriptor = descriptor.nested_types[index]
            message = message_factory.GetMessageClass(descriptor).FromString(bytes(body))
            return json_format.MessageToDict(
                message,
                preserving_proto_field_name=True,
                always_print_fields_with_no_presence=True,
                unquote_int64_if_possible=True,
            )

        return decode


def _file(text: str) -> descriptor_pb2.FileDescriptorProto:
    import base64

    return descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(text))

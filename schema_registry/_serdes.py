"""Avro, Protobuf and JSON Schema serdes in Confluent's wire format.

They follow the serde interface of ``headrace.dsl`` (``serialize(topic, obj)``,
``serializer_for(topic)`` returning a one-argument function, and the same to read),
without importing it: ``Serdes.avro`` and friends in the DSL build them.

Writing: the subject comes from the topic and the strategy (``topic``: ``<topic>-value``
or ``-key``, the default; ``record``: the record's full name; ``topic_record``: both),
the id from registering the schema (``auto_register=True``) or looking it up; both are
asked once per topic and kept. Reading: the id in the record names the writer's schema,
fetched once and kept; Avro resolves it against this serde's schema (the reader's), so
records written with an older or newer compatible schema read as this one.

A pydantic model as the schema also makes the value type: instances are written, and
reading validates into the model.
"""

from __future__ import annotations

import base64
import io
import json
import urllib.parse
from collections.abc import Callable
from typing import Any

import fastavro
import orjson
import pydantic

from . import _wire
from ._client import RegistryClient
from ._errors import SchemaRegistryError, SerdeSchemaError

Encode = Callable[[Any], "bytes | None"]
Decode = Callable[["bytes | None"], Any]
MAX_WRITERS = 1000  # writer schemas kept per serde: bounds what odd records can make us keep
SubjectStrategy = Callable[[str, bool, "str | None"], str]


def topic_name(topic: str, is_key: bool, record: str | None) -> str:
    return f"{topic}-{'key' if is_key else 'value'}"


def record_name(topic: str, is_key: bool, record: str | None) -> str:
    if not record:
        raise SerdeSchemaError("the record name strategy needs a named record schema")
    return record


def topic_record_name(topic: str, is_key: bool, record: str | None) -> str:
    return f"{topic}-{record_name(topic, is_key, record)}"


STRATEGIES: dict[str, SubjectStrategy] = {
    "topic": topic_name,
    "record": record_name,
    "topic_record": topic_record_name,
}


def _client(registry: str | RegistryClient) -> RegistryClient:
    return registry if isinstance(registry, RegistryClient) else RegistryClient(registry)


class SchemaSerde:
    """What the three serdes share: subjects, ids, caches and the serde interface."""

    schema_type = "AVRO"

    def __init__(
        self,
        name: str,
        schema_text: str,
        record: str | None,
        registry: str | RegistryClient,
        *,
        is_key: bool,
        auto_register: bool,
        subject_strategy: str | SubjectStrategy,
        references: tuple[dict[str, Any], ...] = (),
    ) -> None:
        self.name = name
        self.schema_text = schema_text
        self.record = record
        self.registry = _client(registry)
        self.is_key = is_key
        self.auto_register = auto_register
        self.references = references
        strategy = (
            STRATEGIES.get(subject_strategy)
            if isinstance(subject_strategy, str)
            else subject_strategy
        )
        if strategy is None:
            raise ValueError(
                f"unknown subject strategy {subject_strategy!r}: "
                f"expected one of {sorted(STRATEGIES)} or a function"
            )
        self.strategy = strategy
        self._ids: dict[str, int] = {}

    def subject(self, topic: str) -> str:
        return self.strategy(topic, self.is_key, self.record)

    def schema_id(self, topic: str) -> int:
        found = self._ids.get(topic)
        if found is None:
            subject = self.subject(topic)
            if self.auto_register:
                found = self.registry.register(
                    subject, self.schema_text, self.schema_type, self.references
                )
            else:
                found = int(
                    self.registry.lookup(
                        subject, self.schema_text, self.schema_type, self.references
                    )["id"]
                )
            self._ids[topic] = found
        return found

    # -- the serde interface ---------------------------------------------------------

    def serialize(self, topic: str, obj: Any) -> bytes | None:
        encode = self.serializer_for(topic)
        return encode(obj)

    def deserialize(self, topic: str, data: bytes | None) -> Any:
        return self.deserializer_for(topic)(data)

    def serializer_for(self, topic: str) -> Encode:
        def encode(obj: Any) -> bytes | None:
            if obj is None:
                return None
            try:
                return self.encode(topic, obj)
            except SchemaRegistryError:
                raise
            except Exception as exc:
                raise SerdeSchemaError(
                    f"{self.name}: cannot serialize a {type(obj).__name__}: {exc}"
                ) from exc

        return encode

    def deserializer_for(self, topic: str) -> Decode:
        def decode(data: bytes | None) -> Any:
            if data is None:
                return None
            try:
                return self.decode(data)
            except SchemaRegistryError:
                raise
            except Exception as exc:
                raise SerdeSchemaError(f"{self.name}: cannot deserialize: {exc}") from exc

        return decode

    def encode(self, topic: str, obj: Any) -> bytes:
        raise NotImplementedError

    def decode(self, data: bytes) -> Any:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"Serde({self.name})"


class AvroSerde(SchemaSerde):
    schema_type = "AVRO"

    def __init__(
        self,
        schema: Any,
        registry: str | RegistryClient,
        *,
        is_key: bool = False,
        auto_register: bool = True,
        subject_strategy: str | SubjectStrategy = "topic",
    ) -> None:
        self.model: type[pydantic.BaseModel] | None = None
        if isinstance(schema, type) and issubclass(schema, pydantic.BaseModel):
            from ._pydantic_avro import avro_schema

            self.model = schema
            schema = avro_schema(schema)
        document = json.loads(schema) if isinstance(schema, str) else schema
        self.parsed = fastavro.parse_schema(document)
        name = self.parsed.get("name") if isinstance(self.parsed, dict) else None
        super().__init__(
            f"avro({name or document})",
            json.dumps(document),
            name,
            registry,
            is_key=is_key,
            auto_register=auto_register,
            subject_strategy=subject_strategy,
        )
        self._writers: dict[int, tuple[Any, Any]] = {}
        self._canonical = json.dumps(document, sort_keys=True)

    def encode(self, topic: str, obj: Any) -> bytes:
        if self.model is not None and isinstance(obj, pydantic.BaseModel):
            obj = obj.model_dump(by_alias=True)
        out = io.BytesIO()
        out.write(_wire.header(self.schema_id(topic)))
        fastavro.schemaless_writer(out, self.parsed, obj)
        return out.getvalue()

    def _writer_schema(self, schema_id: int) -> tuple[Any, Any]:
        """The writer's parsed schema and the reader schema to resolve it with: None when
        the writer's is this serde's own, as fastavro reads fastest without resolution."""
        found = self._writers.get(schema_id)
        if found is None:
            answer = self.registry.schema(schema_id)
            if answer.get("schemaType", "AVRO") != "AVRO":
                raise SerdeSchemaError(f"schema {schema_id} is {answer['schemaType']}, not AVRO")
            named: dict[str, Any] = {}
            for ref in answer.get("references", ()):
                quoted = urllib.parse.quote(ref["subject"], safe="")
                version = self.registry.request(
                    "GET", f"/subjects/{quoted}/versions/{ref['version']}"
                )
                fastavro.parse_schema(json.loads(version["schema"]), named_schemas=named)
            document = json.loads(answer["schema"])
            writer = fastavro.parse_schema(document, named_schemas=named)
            same = not named and json.dumps(document, sort_keys=True) == self._canonical
            found = (writer, None if same else self.parsed)
            if len(self._writers) >= MAX_WRITERS:
                self._writers.clear()
            self._writers[schema_id] = found
        return found

    def decode(self, data: bytes) -> Any:
        schema_id, payload = _wire.split(data)
        writer, reader = self._writer_schema(schema_id)
        value = fastavro.schemaless_reader(io.BytesIO(payload), writer, reader)
        if self.model is not None:
            return self.model.model_validate(value)
        return value


class JsonSchemaSerde(SchemaSerde):
    schema_type = "JSON"

    def __init__(
        self,
        schema: Any,
        registry: str | RegistryClient,
        *,
        is_key: bool = False,
        auto_register: bool = True,
        subject_strategy: str | SubjectStrategy = "topic",
        validate: bool = True,
    ) -> None:
        import jsonschema

        self.model: type[pydantic.BaseModel] | None = None
        if isinstance(schema, type) and issubclass(schema, pydantic.BaseModel):
            self.model = schema
            schema = schema.model_json_schema()
        document = json.loads(schema) if isinstance(schema, str) else schema
        title = document.get("title") if isinstance(document, dict) else None
        self._validator = (
            jsonschema.validators.validator_for(document)(document) if validate else None
        )
        super().__init__(
            f"json_schema({title or 'schema'})",
            json.dumps(document),
            title,
            registry,
            is_key=is_key,
            auto_register=auto_register,
            subject_strategy=subject_strategy,
        )

    def encode(self, topic: str, obj: Any) -> bytes:
        if isinstance(obj, pydantic.BaseModel):
            obj = obj.model_dump(mode="json", by_alias=True)
        if self._validator is not None:
            self._validator.validate(obj)
        return _wire.header(self.schema_id(topic)) + orjson.dumps(obj)

    def decode(self, data: bytes) -> Any:
        _schema_id, payload = _wire.split(data)
        value = orjson.loads(payload)
        if self.model is not None:
            return self.model.model_validate(value)
        if self._validator is not None:
            self._validator.validate(value)
        return value


class ProtobufSerde(SchemaSerde):
    schema_type = "PROTOBUF"

    def __init__(
        self,
        message_class: Any,
        registry: str | RegistryClient,
        *,
        is_key: bool = False,
        auto_register: bool = True,
        subject_strategy: str | SubjectStrategy = "topic",
    ) -> None:
        self.message_class = message_class
        descriptor = message_class.DESCRIPTOR
        client = _client(registry)
        references = _register_imports(client, descriptor.file) if auto_register else ()
        text = base64.b64encode(descriptor.file.serialized_pb).decode()
        super().__init__(
            f"protobuf({descriptor.full_name})",
            text,
            descriptor.full_name,
            client,
            is_key=is_key,
            auto_register=auto_register,
            subject_strategy=subject_strategy,
            references=references,
        )
        self._indexes = _wire.message_indexes(_indexes_of(descriptor))

    def encode(self, topic: str, obj: Any) -> bytes:
        if not isinstance(obj, self.message_class):
            raise SerdeSchemaError(f"{self.name} got a {type(obj).__name__}")
        payload: bytes = obj.SerializeToString()
        return _wire.header(self.schema_id(topic)) + self._indexes + payload

    def decode(self, data: bytes) -> Any:
        _schema_id, rest = _wire.split(data)
        _indexes, payload = _wire.read_message_indexes(rest)
        return self.message_class.FromString(bytes(payload))


def _indexes_of(descriptor: Any) -> list[int]:
    path = []
    while descriptor.containing_type is not None:
        parent = descriptor.containing_type
        path.append(list(parent.nested_types).index(descriptor))
        descriptor = parent
    path.append(list(descriptor.file.message_types_by_name.values()).index(descriptor))
    return path[::-1]


def _register_imports(client: RegistryClient, file: Any) -> tuple[dict[str, Any], ...]:
    """Register the files ``file`` imports (under their import names, Confluent's default
    reference subjects) and return them as references; protobuf's well-known types are
    known to the registry already."""
    references = []
    for dep in file.dependencies:
        if dep.name.startswith(("google/protobuf/", "confluent/")):
            continue
        dep_refs = _register_imports(client, dep)
        text = base64.b64encode(dep.serialized_pb).decode()
        client.register(dep.name, text, "PROTOBUF", dep_refs)
        version = client.lookup(dep.name, text, "PROTOBUF", dep_refs)["version"]
        references.append({"name": dep.name, "subject": dep.name, "version": version})
    return tuple(references)

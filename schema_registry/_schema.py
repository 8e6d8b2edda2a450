"""Schemas as the registry sees them: a type, the text, its references, and a parsed form.

``parse_schema`` turns what a client sends (``schema``, ``schemaType``, ``references``)
into a :class:`ParsedSchema`, or raises :class:`InvalidSchema` (42201). References are
already resolved by the caller into the parsed schemas they name, in dependency order.

Two registrations are the same schema when their type, canonical text and references
are equal; the registry then hands out the same id, as Confluent's does.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from typing import Any

import fastavro
from google.protobuf import descriptor_pb2, descriptor_pool

from ._errors import InvalidSchema

AVRO = "AVRO"
PROTOBUF = "PROTOBUF"
JSON = "JSON"
SCHEMA_TYPES = (AVRO, JSON, PROTOBUF)


@dataclass(frozen=True)
class Reference:
    """A name the schema uses, resolved to a subject's version (Confluent's reference)."""

    name: str
    subject: str
    version: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "subject": self.subject, "version": self.version}


@dataclass(frozen=True)
class ParsedSchema:
    """A schema that parsed. ``parsed`` is the type's own form: fastavro's parsed schema,
    a JSON Schema document, or a protobuf ``FileDescriptorProto``. ``named`` carries what
    references contributed (Avro named types, JSON documents by name, proto files)."""

    schema_type: str
    text: str
    canonical: str
    parsed: Any
    references: tuple[Reference, ...] = ()
    named: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def identity(self) -> tuple[str, str, tuple[Reference, ...]]:
        return (self.schema_type, self.canonical, self.references)


def parse_schema(
    schema_type: str | None,
    text: Any,
    references: tuple[Reference, ...] = (),
    resolved: tuple[ParsedSchema, ...] = (),
) -> ParsedSchema:
    """Parse ``text`` as ``schema_type`` (default AVRO); ``resolved`` are the referenced
    schemas, already parsed, in the order of ``references``."""
    kind = (schema_type or AVRO).upper()
    if not isinstance(text, str):
        raise InvalidSchema("Invalid schema: 'schema' must be a string")
    if kind == AVRO:
        return _parse_avro(text, references, resolved)
    if kind == JSON:
        return _parse_json(text, references, resolved)
    if kind == PROTOBUF:
        return _parse_protobuf(text, references, resolved)
    raise InvalidSchema(f"Invalid schema type {schema_type!r}: expected one of {SCHEMA_TYPES}")


def _parse_avro(
    text: str, references: tuple[Reference, ...], resolved: tuple[ParsedSchema, ...]
) -> ParsedSchema:
    named: dict[str, Any] = {}
    for ref in resolved:
        named.update(ref.named)
    try:
        document = json.loads(text)
        parsed = fastavro.parse_schema(document, named_schemas=named)
    except (
        ValueError,
        TypeError,
        KeyError,
        fastavro.schema.SchemaParseException,
        fastavro.schema.UnknownType,
    ) as exc:
        raise InvalidSchema(f"Invalid schema: Avro: {exc}") from exc
    canonical = json.dumps(document, separators=(",", ":"), sort_keys=True)
    return ParsedSchema(AVRO, text, canonical, parsed, references, named)


def _parse_json(
    text: str, references: tuple[Reference, ...], resolved: tuple[ParsedSchema, ...]
) -> ParsedSchema:
    import jsonschema

    try:
        document = json.loads(text)
    except ValueError as exc:
        raise InvalidSchema(f"Invalid schema: not JSON: {exc}") from exc
    if not isinstance(document, dict | bool):
        raise InvalidSchema("Invalid schema: a JSON Schema is an object or a boolean")
    try:
        # the stubs take only an object, but a boolean is a whole JSON Schema too
        jsonschema.validators.validator_for(document).check_schema(document)  # type: ignore[arg-type]
    except jsonschema.SchemaError as exc:
        raise InvalidSchema(f"Invalid schema: JSON Schema: {exc.message}") from exc
    named = {ref.name: schema.parsed for ref, schema in zip(references, resolved, strict=True)}
    canonical = json.dumps(document, separators=(",", ":"), sort_keys=True)
    return ParsedSchema(JSON, text, canonical, document, references, named)


def _parse_protobuf(
    text: str, references: tuple[Reference, ...], resolved: tuple[ParsedSchema, ...]
) -> ParsedSchema:
    """Protobuf schemas come as a base64 ``FileDescriptorProto`` (what confluent-kafka's
    serializer sends) or as ``.proto`` text, which ``_proto_text`` compiles to one."""
    file = _descriptor_from_base64(text)
    if file is None:
        from ._proto_text import compile_proto

        file = compile_proto(
            text, {name: s.parsed for name, s in _proto_deps(references, resolved)}
        )
    pool = descriptor_pool.DescriptorPool()
    named: dict[str, Any] = {}
    for ref, dep in zip(references, resolved, strict=True):
        named.update(dep.named)
        named[ref.name] = dep.parsed
    try:
        _add_files(pool, named, file)
    except (TypeError, KeyError, ValueError) as exc:
        raise InvalidSchema(f"Invalid schema: Protobuf: {exc}") from exc
    named[file.name] = file
    canonical = base64.b64encode(file.SerializeToString(deterministic=True)).decode()
    return ParsedSchema(PROTOBUF, text, canonical, file, references, named)


def _proto_deps(
    references: tuple[Reference, ...], resolved: tuple[ParsedSchema, ...]
) -> list[tuple[str, ParsedSchema]]:
    return [(ref.name, dep) for ref, dep in zip(references, resolved, strict=True)]


def _descriptor_from_base64(text: str) -> descriptor_pb2.FileDescriptorProto | None:
    stripped = text.strip()
    if not stripped or any(c.isspace() for c in stripped):
        return None
    try:
        raw = base64.b64decode(stripped, validate=True)
        file = descriptor_pb2.FileDescriptorProto()
        file.ParseFromString(raw)
    except (binascii.Error, ValueError, Exception):  # DecodeError subclasses Exception
        return None
    if not file.name and not file.message_type:
        return None
    if not file.name:
        file.name = "default.proto"
    return file


_WELL_KNOWN = ("google/protobuf/",)


def _add_files(
    pool: descriptor_pool.DescriptorPool,
    named: dict[str, Any],
    file: descriptor_pb2.FileDescriptorProto,
) -> None:
    """Add ``file`` and, first, its dependencies (from ``named`` or protobuf's own
    well-known types) to ``pool``."""
    added: set[str] = set()

    def add(f: descriptor_pb2.FileDescriptorProto) -> None:
        if f.name in added:
            return
        for dep in f.dependency:
            if dep in named:
                add(named[dep])
            elif dep.startswith(_WELL_KNOWN) or dep.startswith("confluent/"):
                add(_well_known(dep))
            else:
                raise KeyError(f"import {dep!r} is not among the schema's references")
        pool.Add(f)
        added.add(f.name)

    add(file)


def _well_known(name: str) -> descriptor_pb2.FileDescriptorProto:
    default = descriptor_pool.Default()
    try:
        found = default.FindFileByName(name)
    except KeyError:
        import importlib

        module = name.removesuffix(".proto").replace("/", ".") + "_pb2"
        if name.startswith("confluent/"):
            module = "confluent_kafka.schema_registry." + module
        importlib.import_module(module)
        found = default.FindFileByName(name)
    proto = descriptor_pb2.FileDescriptorProto()
    found.CopyToProto(proto)
    return proto


def render(schema: ParsedSchema, fmt: str | None) -> str:
    """The schema text to answer with: as registered, or for Protobuf with
    ``format=serialized`` the base64 descriptor that confluent-kafka asks for."""
    if schema.schema_type == PROTOBUF and fmt == "serialized":
        return schema.canonical
    return schema.text

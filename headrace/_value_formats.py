"""The schema registry's formats for ``headrace produce`` and ``consume``:
``--value-format avro|protobuf|json-schema``.

The two commands belong to the client tools, which know nothing of schemas; their
formats are a table of named entries (``client_tools._formats``). This module, at the top where
both sides may meet, adds the registry's formats to that table before the commands'
parsers are built (``prepare``), then the options they need (``register``):
``--schema-registry-url``, and for produce ``--value-schema-file``. Values are JSON text on the command line: produce encodes a
JSON line with the schema, consume prints the decoded value as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

REGISTRY_FORMATS = {
    "avro": "Avro in the schema registry's wire format (values as JSON text)",
    "protobuf": "Protobuf in the schema registry's wire format (values as JSON text)",
    "json-schema": "JSON Schema in the schema registry's wire format",
}
DEFAULT_REGISTRY = "http://127.0.0.1:8081"


def prepare() -> None:
    from headrace.client_tools import _formats as formats

    for name, help_text in REGISTRY_FORMATS.items():
        formats.add_format(
            formats.Format(
                name, help_text, _encoder(name), _decoder(name), _json_text, for_keys=False
            )
        )


def register(subparsers: Any, broker_options: argparse.ArgumentParser) -> None:
    for command_name in ("produce", "consume"):
        command = subparsers.choices.get(command_name)
        if command is None:
            continue
        command.add_argument(
            "--schema-registry-url",
            metavar="URL",
            default=os.environ.get("HEADRACE_SCHEMA_REGISTRY_URL", DEFAULT_REGISTRY),
            help="schema registry of the avro, protobuf and json-schema formats "
            "(default $HEADRACE_SCHEMA_REGISTRY_URL or %(default)s)",
        )
        if command_name == "produce":
            command.add_argument(
                "--value-schema-file",
                metavar="FILE",
                help="the value schema of a registry format (Avro or JSON Schema JSON, or .proto)",
            )


def _encoder(fmt: str) -> Any:
    def make(target: Any) -> Any:
        from headrace.client_tools._formats import FormatError

        schema_file = getattr(target.args, "value_schema_file", None)
        if not schema_file:
            raise FormatError(f"--value-format {fmt} needs --value-schema-file")
        encode = _serde(
            fmt, Path(schema_file).read_text(), target.args.schema_registry_url
        ).serializer_for(target.topic)

        def encode_line(line: str) -> bytes:
            from headrace.schema_registry import SerdeSchemaError

            try:
                value = json.loads(line)
            except ValueError as exc:
                raise FormatError(f"not a JSON value ({exc})") from None
            try:
                data: bytes = encode(value)
            except SerdeSchemaError as exc:  # a value the schema does not take
                raise FormatError(str(exc)) from None
            return data

        return encode_line

    return make


def _decoder(fmt: str) -> Any:
    def make(target: Any) -> Any:
        from headrace.schema_registry._generic import RegistryDecoder

        return RegistryDecoder(target.args.schema_registry_url, fmt).decode

    return make


def _json_text(value: Any) -> str:
    return json.dumps(value, default=_plain)


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return str(value)


def _serde(value_format: str, schema: str, registry: str) -> Any:
    from headrace.schema_registry import AvroSerde, JsonSchemaSerde
    from headrace.schema_registry._dynamic_proto import DynamicProtobufSerde

    if value_format == "avro":
        return AvroSerde(schema, registry)
    if value_format == "json-schema":
        return JsonSchemaSerde(schema, registry)
    return DynamicProtobufSerde(schema, registry)

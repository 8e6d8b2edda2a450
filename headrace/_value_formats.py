"""``--value-format avro|protobuf|json-schema`` for ``headrace produce`` and ``consume``.

The two commands belong to log_broker, which knows nothing of schemas; they call
``args.encode_value`` / ``args.render_value`` for each value. This module, at the top
where both sides may meet, adds the options and, when a registry format is chosen,
puts a schema-registry encoder or decoder in those places before the command runs.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

FORMATS = ("raw", "avro", "protobuf", "json-schema")
DEFAULT_REGISTRY = "http://127.0.0.1:8081"


def register(subparsers: Any, broker_options: argparse.ArgumentParser) -> None:
    for name, wrap in (("produce", _produce), ("consume", _consume)):
        command = subparsers.choices.get(name)
        if command is None:
            continue
        command.add_argument(
            "--value-format",
            choices=FORMATS,
            default="raw",
            help="registry wire format of values (default raw bytes/text)",
        )
        command.add_argument(
            "--schema-registry-url",
            metavar="URL",
            default=os.environ.get("HEADRACE_SCHEMA_REGISTRY_URL", DEFAULT_REGISTRY),
            help="schema registry (default $HEADRACE_SCHEMA_REGISTRY_URL or %(default)s)",
        )
        if name == "produce":
            command.add_argument(
                "--value-schema-file",
                metavar="FILE",
                help="the value schema (Avro or JSON Schema JSON, .proto)",
            )
        run: Callable[[argparse.Namespace], int] = command.get_default("handler")
        command.set_defaults(handler=wrap(run))


def _consume(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    def handler(args: argparse.Namespace) -> int:
        if args.value_format != "raw":
            from headrace.schema_registry._generic import RegistryDecoder

            decoder = RegistryDecoder(args.schema_registry_url, args.value_format)

            def render(value: bytes) -> str:
                return json.dumps(decoder.decode(value), default=_plain)

            args.render_value = render
        return run(args)

    return handler


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return str(value)


def _produce(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    def handler(args: argparse.Namespace) -> int:
        if args.value_format != "raw":
            if not args.value_schema_file:
                raise ValueError(f"--value-format {args.value_format} needs --value-schema-file")
            serde = _serde(
                args.value_format,
                Path(args.value_schema_file).read_text(),
                args.schema_registry_url,
            )
            encode = serde.serializer_for(args.topic)

            def encode_value(line: str) -> bytes:
                try:
                    value = json.loads(line)
                except ValueError as exc:
                    raise ValueError(f"not a JSON value: {line[:80]!r}: {exc}") from exc
                data: bytes = encode(value)
                return data

            args.encode_value = encode_value
        return run(args)

    return handler


def _serde(value_format: str, schema: str, registry: str) -> Any:
    from headrace.schema_registry import AvroSerde, JsonSchemaSerde
    from headrace.schema_registry._dynamic_proto import DynamicProtobufSerde

    if value_format == "avro":
        return AvroSerde(schema, registry)
    if value_format == "json-schema":
        return JsonSchemaSerde(schema, registry)
    return DynamicProtobufSerde(schema, registry)

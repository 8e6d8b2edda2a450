"""One record produced from the console's form (admin mode only): key, value, headers,
and optionally the value encoded with the latest schema of the topic's value subject
through the registry's own serializer, as an application would write it.

Encoding with a schema, step by step: the subject is ``<topic>-value`` (the topic
naming strategy, the serializers' default); its latest version says the schema type;
the value typed in is read as JSON and written by ``AvroSerde`` or ``JsonSchemaSerde``
without registering anything (the schema is the registry's already), which puts the
registry's wire format (magic byte, schema id) in front. Protobuf needs the message's
generated class, which a form cannot give, so it is refused with that reason.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaProducer

REGISTRY_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Produced:
    partition: int
    offset: int


def parse_headers(text: str) -> list[tuple[str, bytes]]:
    """Headers typed one per line as ``name=value``.

    >>> parse_headers("source=console\\n\\ntrace = 42 ")
    [('source', b'console'), ('trace', b'42')]
    """
    headers = []
    for line in text.splitlines():
        if not line.strip():
            continue
        name, sep, value = line.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"a header is name=value, one per line: not {line.strip()!r}")
        headers.append((name.strip(), value.strip().encode()))
    return headers


def encode_with_latest_schema(registry_url: str, topic: str, value: str) -> bytes:
    """``value`` (JSON text) in the registry's wire format, with the latest schema of
    ``<topic>-value``. Blocks on the registry: call it in a thread."""
    from headrace.schema_registry import (
        AvroSerde,
        JsonSchemaSerde,
        RegistryClient,
        SchemaRegistryError,
    )

    client = RegistryClient(registry_url, timeout=REGISTRY_TIMEOUT_S)
    subject = f"{topic}-value"
    try:
        latest = client.latest(subject)
    except SchemaRegistryError as error:
        raise ValueError(f"no schema for {subject!r} in the registry: {error}") from None
    try:
        document = json.loads(value)
    except ValueError as error:
        raise ValueError(f"a value written with a schema is JSON: {error}") from None
    kind = latest.get("schemaType", "AVRO")
    serde: Any
    if kind == "AVRO":
        serde = AvroSerde(latest["schema"], client, auto_register=False)
    elif kind == "JSON":
        serde = JsonSchemaSerde(latest["schema"], client, auto_register=False)
    else:
        raise ValueError(f"{subject!r} is {kind}: the console writes Avro and JSON Schema values")
    try:
        encoded: bytes = serde.encode(topic, document)
    except Exception as error:  # fastavro, jsonschema and the registry raise their own kinds
        raise ValueError(
            f"the value does not fit {subject!r} version {latest['version']}: {error}"
        ) from None
    return encoded


async def produce(
    client_options: dict[str, Any],
    topic: str,
    *,
    key: bytes | None,
    value: bytes | None,
    headers: list[tuple[str, bytes]],
    partition: int | None,
) -> Produced:
    producer = AIOKafkaProducer(**client_options, acks="all", enable_idempotence=True)
    await producer.start()
    try:
        sent = await producer.send_and_wait(
            topic, value=value, key=key, headers=headers, partition=partition
        )
    finally:
        await producer.stop()
    return Produced(sent.partition, sent.offset)


async def value_bytes(registry_url: str | None, topic: str, value: str, schema: str) -> bytes:
    """The value as the form asks: plain UTF-8 text, or encoded with the latest schema."""
    if schema != "latest":
        return value.encode()
    if registry_url is None:
        raise ValueError("the console knows no schema registry: start it with --schema-registry")
    return await asyncio.to_thread(encode_with_latest_schema, registry_url, topic, value)

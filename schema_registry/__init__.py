"""A Confluent-compatible Schema Registry, kept in the compacted ``_schemas`` topic of any
Kafka-protocol cluster, and the Avro, Protobuf and JSON Schema serdes that use it.

The names load on first use, so the ``headrace`` command, which registers this
package's subcommand, does not import the HTTP server or the codecs to start.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._client import RegistryClient as RegistryClient
    from ._errors import SchemaRegistryError as SchemaRegistryError
    from ._errors import SerdeSchemaError as SerdeSchemaError
    from ._serdes import AvroSerde as AvroSerde
    from ._serdes import JsonSchemaSerde as JsonSchemaSerde
    from ._serdes import ProtobufSerde as ProtobufSerde
    from ._serdes import record_name as record_name
    from ._serdes import topic_name as topic_name
    from ._serdes import topic_record_name as topic_record_name
    from ._server import SchemaRegistryServer as SchemaRegistryServer

# Where each public name is defined.
_HOMES = {
    "AvroSerde": "._serdes",
    "JsonSchemaSerde": "._serdes",
    "ProtobufSerde": "._serdes",
    "RegistryClient": "._client",
    "SchemaRegistryError": "._errors",
    "SchemaRegistryServer": "._server",
    "SerdeSchemaError": "._errors",
    "record_name": "._serdes",
    "topic_name": "._serdes",
    "topic_record_name": "._serdes",
}

__all__ = list(_HOMES)


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(home, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

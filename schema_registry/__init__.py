"""A Confluent-compatible Schema Registry, kept in the compacted ``_schemas`` topic of any
Kafka-protocol cluster, and the Avro, Protobuf and JSON Schema serdes that use it."""

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

__all__ = [
    "AvroSerde",
    "JsonSchemaSerde",
    "ProtobufSerde",
    "RegistryClient",
    "SchemaRegistryError",
    "SchemaRegistryServer",
    "SerdeSchemaError",
    "record_name",
    "topic_name",
    "topic_record_name",
]

"""A Confluent-compatible Schema Registry, kept in the compacted ``_schemas`` topic of any
Kafka-protocol cluster, and the Avro, Protobuf and JSON Schema serdes that use it."""

from ._errors import SchemaRegistryError as SchemaRegistryError
from ._server import SchemaRegistryServer as SchemaRegistryServer

__all__ = ["SchemaRegistryError", "SchemaRegistryServer"]

"""A struct ``value`` column written in the schema registry's wire format.

The writer's schema is the latest one registered under the value subject, as a
Confluent serializer with ``use.latest.version`` picks it. With none there yet, an Avro
write registers the schema Spark's ``to_avro`` would derive from the column's type (a
record named ``topLevelRecord``, a nullable field a union with null); a JSON Schema
write needs its schema registered first. Encoding is the registry package's serdes,
so the bytes are what every other headrace producer writes.
"""

from __future__ import annotations

import json
from typing import Any

from ._errors import OptionError

_AVRO_PRIMITIVES = {
    "string": "string",
    "long": "long",
    "integer": "int",
    "short": "int",
    "byte": "int",
    "double": "double",
    "float": "float",
    "boolean": "boolean",
    "binary": "bytes",
    "timestamp": {"type": "long", "logicalType": "timestamp-micros"},
    "date": {"type": "int", "logicalType": "date"},
}


def avro_schema_of(spark_type: Any, name: str = "topLevelRecord") -> Any:
    """The Avro schema Spark's ``to_avro`` derives from a Spark type (its JSON form)."""
    from pyspark.sql.types import ArrayType, MapType, StructType

    if isinstance(spark_type, StructType):
        fields = []
        for f in spark_type.fields:
            kind = avro_schema_of(f.dataType, f"{name}.{f.name}")
            if f.nullable:
                fields.append({"name": f.name, "type": ["null", kind], "default": None})
            else:
                fields.append({"name": f.name, "type": kind})
        return {"type": "record", "name": name.rsplit(".", 1)[-1], "fields": fields}
    if isinstance(spark_type, ArrayType):
        items = avro_schema_of(spark_type.elementType, name)
        return {"type": "array", "items": ["null", items] if spark_type.containsNull else items}
    if isinstance(spark_type, MapType):
        if spark_type.keyType.typeName() != "string":
            raise OptionError(f"Avro maps have string keys; {name} has {spark_type.keyType}")
        values = avro_schema_of(spark_type.valueType, name)
        return {
            "type": "map",
            "values": ["null", values] if spark_type.valueContainsNull else values,
        }
    found = _AVRO_PRIMITIVES.get(spark_type.typeName())
    if found is None:
        raise OptionError(f"no Avro type for {name} of Spark type {spark_type.simpleString()}")
    return found


class RegistryValues:
    """Chosen on the driver (the subject's latest schema, or a new Avro one registered),
    pickled to the tasks, where each builds its serde once."""

    def __init__(self, registry_url: str, subject: str, value_format: str, value_type: Any):
        from headrace.schema_registry import RegistryClient, SchemaRegistryError

        self.registry_url = registry_url
        self.subject = subject
        client = RegistryClient(registry_url)
        try:
            latest: dict[str, Any] | None = client.latest(subject)
        except SchemaRegistryError:
            latest = None
        wanted = "AVRO" if value_format == "avro" else "JSON"
        if latest is None:
            if value_format != "avro":
                raise OptionError(
                    f"value.format={value_format}: no schema is registered under {subject!r}"
                )
            self.schema_text = json.dumps(avro_schema_of(value_type))
            client.register(subject, self.schema_text)
        elif latest.get("schemaType", "AVRO") != wanted:
            raise OptionError(
                f"value.format={value_format}, but the latest schema of {subject!r} is"
                f" {latest.get('schemaType', 'AVRO')}"
            )
        else:
            self.schema_text = latest["schema"]
        self.value_format = value_format
        self._serde: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_serde": None}

    def encoder(self) -> Any:
        """A function of one value (a dict, or None for a tombstone) to framed bytes."""
        if self._serde is None:
            from headrace.schema_registry import AvroSerde, JsonSchemaSerde

            subject = self.subject
            kind = AvroSerde if self.value_format == "avro" else JsonSchemaSerde
            self._serde = kind(
                self.schema_text,
                self.registry_url,
                auto_register=False,  # the driver registered it, or found it registered
                subject_strategy=lambda _topic, _is_key, _record: subject,
            )
        return self._serde.serializer_for(self.subject)

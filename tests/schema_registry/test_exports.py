"""The public surface of schema_registry and its error tree (which way its imports point:
tests/test_layering.py)."""

from __future__ import annotations

from headrace import schema_registry
from headrace.schema_registry import SchemaRegistryError, SerdeSchemaError
from headrace.schema_registry._errors import BY_CODE, IncompatibleSchema, StoreError


def test_all_is_pinned() -> None:
    assert schema_registry.__all__ == [
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
    for name in schema_registry.__all__:
        assert getattr(schema_registry, name) is not None


def test_errors_have_one_root_and_confluent_codes() -> None:
    for code, cls in BY_CODE.items():
        assert issubclass(cls, SchemaRegistryError) and cls.error_code == code
    assert issubclass(SerdeSchemaError, SchemaRegistryError)
    assert (IncompatibleSchema.http_status, IncompatibleSchema.error_code) == (409, 409)
    assert StoreError.retriable and not IncompatibleSchema.retriable

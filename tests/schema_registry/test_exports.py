"""The public surface of schema_registry, its error tree, and which way imports point."""

from __future__ import annotations

import subprocess
import sys

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


def test_the_registry_imports_neither_the_broker_nor_the_dsl() -> None:
    code = (
        "import sys, headrace.schema_registry, headrace.schema_registry._generic; "
        "bad = [m for m in sys.modules if m.startswith(('headrace.log_broker', "
        "'headrace.dsl', 'headrace.streams'))]; print(bad)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"

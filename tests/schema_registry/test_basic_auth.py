"""Basic auth on the registry: refused without credentials, served with them, to
confluent-kafka's client and headrace's serdes alike."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError as ConfluentError
from registryproc import broker_with_registry

from headrace import Serdes
from headrace.schema_registry import SchemaRegistryError

SCHEMA = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("auth")
    users = root / "users"
    users.write_text("# name:password\nalice:s3cret\n")
    with broker_with_registry(root / "data", "--schema-registry-users", str(users)) as both:
        yield both[1].removeprefix("http://")


def test_requests_without_credentials_are_refused(secured: str) -> None:
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"http://{secured}/subjects", timeout=10)
    assert refused.value.code == 401
    assert json.loads(refused.value.read())["error_code"] == 40101
    with SchemaRegistryClient(
        {"url": f"http://{secured}", "basic.auth.user.info": "alice:wrong"}
    ) as client:
        with pytest.raises(ConfluentError) as wrong:
            client.get_subjects()
        assert wrong.value.http_status_code == 401
    with pytest.raises(SchemaRegistryError) as ours:
        Serdes.avro(SCHEMA, f"http://{secured}").serialize("t", {"a": 1})
    assert ours.value.error_code == 40101


def test_credentials_are_served(secured: str, tmp_path: Path) -> None:
    with SchemaRegistryClient(
        {"url": f"http://{secured}", "basic.auth.user.info": "alice:s3cret"}
    ) as client:
        schema_id = client.register_schema("t-value", Schema(SCHEMA, "AVRO"))
    serde = Serdes.avro(SCHEMA, f"http://alice:s3cret@{secured}")
    data = serde.serialize("t", {"a": 1})
    assert data[1:5] == schema_id.to_bytes(4, "big")
    assert serde.deserialize("t", data) == {"a": 1}

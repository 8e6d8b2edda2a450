"""confluent-kafka's registry client and serializers, unmodified, against the built-in
registry, and round trips with headrace's serdes in both directions."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pydantic
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError as ConfluentError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from headrace import Serdes
from headrace.examples import shop_pb2
from headrace.schema_registry import SchemaRegistryError

ORDER_V1 = {
    "type": "record",
    "name": "Order",
    "namespace": "shop",
    "fields": [{"name": "id", "type": "string"}, {"name": "cents", "type": "long"}],
}
ORDER_V2 = {
    **ORDER_V1,
    "fields": [*ORDER_V1["fields"], {"name": "note", "type": "string", "default": ""}],
}


class Order(pydantic.BaseModel):
    id: str
    cents: int
    note: str = ""


@pytest.fixture
def client(registry_url: str) -> Iterator[SchemaRegistryClient]:
    with SchemaRegistryClient({"url": registry_url}) as c:
        yield c


def ctx(topic: str) -> SerializationContext:
    return SerializationContext(topic, MessageField.VALUE)


def test_client_register_fetch_evolve_refuse_delete(client: SchemaRegistryClient) -> None:
    v1 = Schema(json.dumps(ORDER_V1), "AVRO")
    first = client.register_schema("c-value", v1)
    assert client.get_schema(first).schema_str == v1.schema_str
    assert client.lookup_schema("c-value", v1).version == 1
    second = client.register_schema("c-value", Schema(json.dumps(ORDER_V2), "AVRO"))
    assert second != first and client.get_versions("c-value") == [1, 2]
    assert client.get_latest_version("c-value").schema_id == second
    assert client.test_compatibility("c-value", Schema(json.dumps(ORDER_V1), "AVRO"))
    broken = {**ORDER_V1, "fields": [{"name": "id", "type": "int"}]}
    with pytest.raises(ConfluentError) as refused:
        client.register_schema("c-value", Schema(json.dumps(broken), "AVRO"))
    assert (refused.value.http_status_code, refused.value.error_code) == (409, 409)
    client.set_compatibility("c-value", "NONE")
    assert client.get_compatibility("c-value") == "NONE"
    assert client.delete_version("c-value", 2) == 2
    assert client.delete_subject("c-value") == [1]
    assert client.delete_subject("c-value", permanent=True) == [1, 2]
    with pytest.raises(ConfluentError) as gone:
        client.get_versions("c-value")
    assert gone.value.error_code == 40401
    assert client.get_schema_types() == ["AVRO", "JSON", "PROTOBUF"]


def test_avro_both_ways_and_evolution(client: SchemaRegistryClient, registry_url: str) -> None:
    ours = Serdes.avro(Order, registry_url)
    data = ours.serialize("orders", Order(id="o1", cents=250))
    assert data[0] == 0  # the magic byte
    theirs = AvroDeserializer(client)
    assert theirs(data, ctx("orders")) == {"id": "o1", "cents": 250, "note": ""}
    # confluent-kafka writes with the older schema; headrace reads with its newer one.
    writer = AvroSerializer(client, json.dumps(ORDER_V1))
    written = writer({"id": "o2", "cents": 5}, ctx("orders-old"))
    assert ours.deserialize("orders-old", written) == Order(id="o2", cents=5, note="")
    # And a plain-dict reader schema reads what the model wrote.
    plain = Serdes.avro(ORDER_V1, registry_url)
    assert plain.deserialize("orders", data) == {"id": "o1", "cents": 250}


def test_protobuf_both_ways(client: SchemaRegistryClient, registry_url: str) -> None:
    ours = Serdes.protobuf(shop_pb2.Customer, registry_url)
    customer = shop_pb2.Customer(
        id="c1", name="Ada", tier=2, address=shop_pb2.Customer.Address(city="Oslo")
    )
    data = ours.serialize("customers", customer)
    theirs = ProtobufDeserializer(shop_pb2.Customer, {"use.deprecated.format": False})
    assert theirs(data, ctx("customers")) == customer
    writer = ProtobufSerializer(shop_pb2.Customer, client, {"use.deprecated.format": False})
    written = writer(customer, ctx("customers-theirs"))
    assert ours.deserialize("customers-theirs", written) == customer
    # Both registered the same descriptor: one id.
    assert data[1:5] == written[1:5]


def test_json_schema_both_ways(client: SchemaRegistryClient, registry_url: str) -> None:
    ours = Serdes.json_schema(Order, registry_url)
    data = ours.serialize("orders-json", Order(id="o3", cents=1))
    theirs = JSONDeserializer(None, schema_registry_client=client)
    assert theirs(data, ctx("orders-json")) == {"id": "o3", "cents": 1, "note": ""}
    writer = JSONSerializer(json.dumps(Order.model_json_schema()), client)
    written = writer({"id": "o4", "cents": 9}, ctx("orders-json-theirs"))
    assert ours.deserialize("orders-json-theirs", written) == Order(id="o4", cents=9)
    with pytest.raises(SchemaRegistryError):
        ours.serialize("orders-json", {"id": 5})  # fails the schema: refused, not written


def test_subject_strategies_and_auto_register(
    client: SchemaRegistryClient, registry_url: str
) -> None:
    Serdes.avro(ORDER_V1, registry_url, subject_strategy="record").serialize(
        "t1", {"id": "a", "cents": 1}
    )
    Serdes.avro(ORDER_V1, registry_url, subject_strategy="topic_record").serialize(
        "t1", {"id": "a", "cents": 1}
    )
    Serdes.avro(ORDER_V1, registry_url, is_key=True).serialize("t1", {"id": "a", "cents": 1})
    subjects = client.get_subjects()
    assert {"shop.Order", "t1-shop.Order", "t1-key"} <= set(subjects)
    fixed = Serdes.avro(ORDER_V1, registry_url, auto_register=False)
    with pytest.raises(SchemaRegistryError) as missing:
        fixed.serialize("t-unregistered", {"id": "a", "cents": 1})
    assert missing.value.error_code == 40401
    schema_id = client.register_schema("t2-value", Schema(json.dumps(ORDER_V1), "AVRO"))
    assert fixed.serialize("t2", {"id": "b", "cents": 2})[1:5] == schema_id.to_bytes(4, "big")

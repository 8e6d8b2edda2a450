"""Avro orders joined with a Protobuf customer table, Avro results, then Delta and Spark SQL.

Everything on the topics is in the schema registry's wire format, written and read by
different software:

1. ``customers`` (keyed by customer id) holds Protobuf ``shop.Customer`` messages and
   ``orders`` (keyed by customer id) Avro ``Order`` records, both produced by
   confluent-kafka's own ``ProtobufSerializer``/``AvroSerializer``, the orders once the
   service has read the customers;
2. the topology reads customers as a table (``Serdes.protobuf``) and orders as a stream
   (``Serdes.avro`` with a pydantic model), joins each order with its customer and
   writes an ``EnrichedOrder`` with ``Serdes.avro`` to ``orders-enriched``;
3. the export copies ``orders-enriched`` into a Delta table, the Avro fields as typed
   columns (``value_format="avro"``), and Spark SQL totals it per city.

    python -m headrace.examples.schema_orders --bootstrap-servers 127.0.0.1:9092 \\
        --schema-registry-url http://127.0.0.1:8081 --delta-path /tmp/orders

(``headrace broker --schema-registry-listen 127.0.0.1:8081`` runs both.)
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import uuid
from collections import Counter
from typing import Any

import pydantic

from headrace import Serdes, StreamsBuilder, Topology
from headrace.examples import shop_pb2

CUSTOMERS, ORDERS, ENRICHED = "customers", "orders", "orders-enriched"
CITIES = ("Oslo", "Rome", "Lima", "Pune")
REPORT = """
    SELECT city, count(*) AS orders, sum(total_cents) AS cents, max(tier) AS top_tier
    FROM orders_enriched GROUP BY city ORDER BY city
"""


class Order(pydantic.BaseModel):
    order_id: str
    customer_id: str
    cents: int
    quantity: int = 1


class EnrichedOrder(pydantic.BaseModel):
    order_id: str
    customer_id: str
    customer_name: str
    tier: int
    city: str
    total_cents: int


def enrich(order: Order, customer: Any) -> EnrichedOrder:
    return EnrichedOrder(
        order_id=order.order_id,
        customer_id=order.customer_id,
        customer_name=customer.name,
        tier=customer.tier,
        city=customer.address.city,
        total_cents=order.cents * order.quantity,
    )


def build(registry: str, builder: StreamsBuilder | None = None) -> StreamsBuilder:
    builder = builder or StreamsBuilder()
    string = Serdes.string()
    customers = builder.table(
        CUSTOMERS, key_serde=string, value_serde=Serdes.protobuf(shop_pb2.Customer, registry)
    )
    (
        builder.stream(ORDERS, key_serde=string, value_serde=Serdes.avro(Order, registry))
        .join(customers, enrich, name="enrich")
        .to(ENRICHED, key_serde=string, value_serde=Serdes.avro(EnrichedOrder, registry))
    )
    return builder


def build_topology(registry: str) -> Topology:
    return build(registry).build()


def sample(
    n_customers: int, n_orders: int, seed: int = 3
) -> tuple[list[Any], list[dict[str, Any]]]:
    rng = random.Random(seed)
    customers = [
        shop_pb2.Customer(
            id=f"c{i}",
            name=f"Customer {i}",
            tier=rng.randrange(1, 4),
            address=shop_pb2.Customer.Address(city=rng.choice(CITIES)),
        )
        for i in range(n_customers)
    ]
    orders = [
        {
            "order_id": f"o{i}",
            "customer_id": f"c{rng.randrange(n_customers)}",
            "cents": rng.randrange(100, 10_000),
            "quantity": rng.randrange(1, 4),
        }
        for i in range(n_orders)
    ]
    return customers, orders


def expected_per_city(customers: list[Any], orders: list[dict[str, Any]]) -> dict[str, int]:
    city = {c.id: c.address.city for c in customers}
    totals: Counter[str] = Counter()
    for order in orders:
        totals[city[order["customer_id"]]] += order["cents"] * order["quantity"]
    return dict(totals)


def create_topics(bootstrap: str) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics(
        [NewTopic(t, 1, 1) for t in (CUSTOMERS, ORDERS, ENRICHED)]
    ).values():
        try:
            future.result(30)
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise


def publish(bootstrap: str, registry: str, topic: str, values: list[Any]) -> None:
    """Step 1, with confluent-kafka's own serializers and producer."""
    import json

    from confluent_kafka import SerializingProducer
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import StringSerializer

    from headrace.schema_registry._pydantic_avro import avro_schema

    with SchemaRegistryClient({"url": registry}) as client:
        if topic == CUSTOMERS:
            serializer: Any = ProtobufSerializer(
                shop_pb2.Customer, client, {"use.deprecated.format": False}
            )
        else:
            serializer = AvroSerializer(client, json.dumps(avro_schema(Order)))
        producer = SerializingProducer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "key.serializer": StringSerializer(),
                "value.serializer": serializer,
            }
        )
        for value in values:
            key = value.id if topic == CUSTOMERS else value["customer_id"]
            producer.produce(topic, key=key, value=value)
        if producer.flush(30):
            raise RuntimeError(f"not every record reached {topic}")


async def join_as_a_service(
    bootstrap: str,
    registry: str,
    state_dir: str,
    customers: list[Any],
    orders: list[dict[str, Any]],
    within: float = 120,
) -> int:
    """Step 2: run the topology; once it has read every customer into its table, send
    the orders (an order whose customer the table lacks joins nothing, as in Kafka
    Streams), and run until every order is enriched."""
    from aiokafka import AIOKafkaConsumer

    from headrace import App

    app = App(
        f"schema-orders-{uuid.uuid4().hex[:6]}",
        build_topology(registry),
        bootstrap_servers=bootstrap,
        state_dir=state_dir,
        commit_interval_ms=200,
        http_port=0,
        log_level="WARNING",
    )
    consumer = AIOKafkaConsumer(
        ENRICHED,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
    )
    await app.start()
    await consumer.start()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    seen = 0
    try:
        await asyncio.to_thread(publish, bootstrap, registry, CUSTOMERS, customers)
        for _tick in range(int(within * 10)):  # poll the service's count, up to ``within``
            if app.status()["consumed"] >= len(customers):
                break
            await asyncio.sleep(0.1)
        await asyncio.to_thread(publish, bootstrap, registry, ORDERS, orders)
        while seen < len(orders) and loop.time() < deadline:
            batches = await consumer.getmany(timeout_ms=500)
            seen += sum(len(records) for records in batches.values())
    finally:
        await consumer.stop()
        await app.stop()
    return seen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Avro orders x Protobuf customers -> Delta")
    parser.add_argument("--bootstrap-servers", default="127.0.0.1:9092")
    parser.add_argument("--schema-registry-url", default="http://127.0.0.1:8081")
    parser.add_argument("--delta-path", required=True)
    parser.add_argument("--orders", type=int, default=2_000)
    args = parser.parse_args(argv)

    from headrace.base.table import QUERY_RESULT, render_table
    from headrace.spark_bridge import export_topic, register_delta_tables, spark_session

    bootstrap, registry = args.bootstrap_servers, args.schema_registry_url
    customers, orders = sample(50, args.orders)
    create_topics(bootstrap)
    with tempfile.TemporaryDirectory(prefix="schema-orders-") as state_dir:
        joined = asyncio.run(join_as_a_service(bootstrap, registry, state_dir, customers, orders))
    print(f"[topics]  {len(customers)} Protobuf customers, {len(orders)} Avro orders")
    print(f"[streams] {joined} enriched orders (Avro) on {ENRICHED}")
    result = export_topic(
        bootstrap, ENRICHED, args.delta_path, value_format="avro", schema_registry_url=registry
    )
    print(f"[delta]   exported {result.records} rows with typed columns")
    spark = spark_session("headrace-schema-orders")
    spark.sparkContext.setLogLevel("ERROR")
    try:
        register_delta_tables(spark, {"orders_enriched": args.delta_path})
        types = dict(spark.table("orders_enriched").dtypes)
        print(f"[spark]   columns: {', '.join(f'{k} {v}' for k, v in types.items())}")
        report = spark.sql(REPORT)
        rows = report.collect()
        print(render_table(report.columns, [tuple(r) for r in rows], QUERY_RESULT))
        ok = {r.city: r.cents for r in rows} == expected_per_city(customers, orders)
        print(f"[check]   totals per city match the orders sent: {ok}")
    finally:
        spark.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

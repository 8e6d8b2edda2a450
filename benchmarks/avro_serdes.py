"""Avro serialize + deserialize, records per second: headrace's AvroSerde against
confluent-kafka's AvroSerializer/AvroDeserializer, on the same records and the same
registry (the built-in one, inside a broker process).

Both sides are bound once per topic, as an application would: headrace's through
``serializer_for``/``deserializer_for``, confluent-kafka's serializer objects called
with a SerializationContext. Rounds alternate between the two so the busy machine's
noise falls on both; the best round of each is reported, and the ratio.

Run: ``python benchmarks/avro_serdes.py [--records N] [--rounds N]``.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from bench_broker import broker_process, free_port, wait_port
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from headrace import Serdes

SCHEMA = {
    "type": "record",
    "name": "Order",
    "namespace": "bench",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "customer", "type": "string"},
        {"name": "cents", "type": "long"},
        {"name": "quantity", "type": "int"},
        {"name": "express", "type": "boolean"},
        {"name": "note", "type": ["null", "string"], "default": None},
    ],
}


def records(n: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"o{i}",
            "customer": f"c{i % 97}",
            "cents": i * 13,
            "quantity": i % 7,
            "express": i % 2 == 0,
            "note": None if i % 3 else "fragile",
        }
        for i in range(n)
    ]


def timed(roundtrip: Callable[[dict[str, Any]], Any], values: list[dict[str, Any]]) -> float:
    start = time.perf_counter()
    for value in values:
        roundtrip(value)
    return len(values) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    values = records(args.records)
    registry_port = free_port()
    with (
        tempfile.TemporaryDirectory() as tmp,
        broker_process(
            Path(tmp), "--schema-registry-listen", f"127.0.0.1:{registry_port}", fsync="always"
        ),
    ):
        wait_port(registry_port)
        url = f"http://127.0.0.1:{registry_port}"
        ours = Serdes.avro(SCHEMA, url)
        encode, decode = ours.serializer_for("orders"), ours.deserializer_for("orders")
        with SchemaRegistryClient({"url": url}) as client:
            serializer = AvroSerializer(client, json.dumps(SCHEMA))
            deserializer = AvroDeserializer(client)
            ctx = SerializationContext("orders", MessageField.VALUE)

            def headrace_roundtrip(value: dict[str, Any]) -> Any:
                return decode(encode(value))

            def confluent_roundtrip(value: dict[str, Any]) -> Any:
                return deserializer(serializer(value, ctx), ctx)

            assert headrace_roundtrip(values[1]) == confluent_roundtrip(values[1])
            best = {"headrace": 0.0, "confluent-kafka": 0.0}
            for _ in range(args.rounds):
                best["headrace"] = max(best["headrace"], timed(headrace_roundtrip, values))
                best["confluent-kafka"] = max(
                    best["confluent-kafka"], timed(confluent_roundtrip, values)
                )
    for name, rate in best.items():
        print(f"{name:16} {rate:12,.0f} records/s (serialize + deserialize, best of {args.rounds})")
    print(f"ratio headrace / confluent-kafka: {best['headrace'] / best['confluent-kafka']:.2f}x")


if __name__ == "__main__":
    main()

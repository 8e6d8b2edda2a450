"""The schema example end to end: confluent-kafka's serializers -> topology (Avro stream
x Protobuf table -> Avro) -> Delta with typed columns -> Spark SQL."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from registryproc import broker_with_registry

from headrace.examples import shop_pb2
from headrace.examples.schema_orders import (
    CUSTOMERS,
    ENRICHED,
    ORDERS,
    EnrichedOrder,
    Order,
    build,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_example_runs_as_a_program(tmp_path: Path) -> None:
    with broker_with_registry(tmp_path / "data") as (bootstrap, url):
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "headrace.examples.schema_orders",
                "--bootstrap-servers",
                bootstrap,
                "--schema-registry-url",
                url,
                "--delta-path",
                str(tmp_path / "orders"),
                "--orders",
                "400",
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=240,
        )
    out = result.stdout
    assert result.returncode == 0, out + result.stderr[-3000:]
    assert "[streams] 400 enriched orders" in out
    assert "[delta]   exported 400 rows" in out
    # Typed columns straight from the Avro schema, not strings to parse.
    assert "total_cents bigint" in out and "tier bigint" in out and "city string" in out
    assert "totals per city match the orders sent: True" in out


def test_the_topology_joins_through_the_registry(tmp_path: Path) -> None:
    from headrace import Serdes
    from headrace.testing import TopologyTestDriver

    with (
        broker_with_registry(tmp_path / "data") as (_bootstrap, url),
        TopologyTestDriver(build(url).build(), {"application_id": "so"}) as driver,
    ):
        string = Serdes.string()
        customers = driver.create_input_topic(
            CUSTOMERS, string, Serdes.protobuf(shop_pb2.Customer, url)
        )
        orders = driver.create_input_topic(ORDERS, string, Serdes.avro(Order, url))
        out = driver.create_output_topic(ENRICHED, string, Serdes.avro(EnrichedOrder, url))
        customers.pipe_input(
            "c1",
            shop_pb2.Customer(
                id="c1", name="Ada", tier=2, address=shop_pb2.Customer.Address(city="Oslo")
            ),
        )
        orders.pipe_input("c1", Order(order_id="o1", customer_id="c1", cents=300, quantity=2))
        orders.pipe_input("c9", Order(order_id="o2", customer_id="c9", cents=1))
        joined = out.read_key_values_to_list()
        # The order of an unknown customer joins nothing.
        assert [(kv.key, kv.value) for kv in joined] == [
            (
                "c1",
                EnrichedOrder(
                    order_id="o1",
                    customer_id="c1",
                    customer_name="Ada",
                    tier=2,
                    city="Oslo",
                    total_cents=600,
                ),
            )
        ]

"""Orders joined with their payments: a stream-stream left join within ten minutes.

Orders arrive on ``orders`` and payments on ``payments``, both keyed by order id, as
JSON (``{"customer": ..., "amount": ...}`` and ``{"amount": ...}``), the event time as
the record timestamp. The topology

1. left-joins each order with the payments for it made from one minute before to ten
   minutes after the order (``JoinWindows.of_time_difference(10 min).before(1 min)``),
   accepting records up to 30 s out of order (grace),
2. writes ``{"order", "customer", "amount", "status"}`` to ``order-status``: ``paid``
   for a payment of the full amount, ``short`` for less, and ``unpaid`` for an order
   no payment matched, which is reported only once its window has closed, never
   early, and never for an order that did get paid.

Both topics must be co-partitioned (same partition count, keyed by order id); the
runtime refuses to start otherwise. Run ``python -m headrace.examples.orders_payments`` to pipe
sample orders through the test driver.
"""

from __future__ import annotations

from typing import Any

from headrace import JoinWindows, Serdes, StreamsBuilder, Topology
from headrace.testing import TestRecord, TopologyTestDriver

ORDERS, PAYMENTS, STATUS = "orders", "payments", "order-status"
MINUTE = 60_000
WINDOWS = JoinWindows.of_time_difference(10 * MINUTE).before(MINUTE).grace(30_000)


def order_status(
    order_id: str, order: dict[str, Any], payment: dict[str, Any] | None
) -> dict[str, Any]:
    if payment is None:
        status = "unpaid"
    else:
        status = "paid" if payment["amount"] >= order["amount"] else "short"
    return {
        "order": order_id,
        "customer": order["customer"],
        "amount": order["amount"],
        "status": status,
    }


def build(builder: StreamsBuilder | None = None) -> StreamsBuilder:
    builder = builder or StreamsBuilder()
    json, string = Serdes.json(), Serdes.string()
    orders = builder.stream(ORDERS, key_serde=string, value_serde=json)
    payments = builder.stream(PAYMENTS, key_serde=string, value_serde=json)
    orders.left_join(payments, order_status, WINDOWS, with_key=True, name="order-payments").to(
        STATUS, key_serde=string, value_serde=json
    )
    return builder


def build_topology() -> Topology:
    return build().build()


T0 = 1_700_000_000_000
SAMPLE_ORDERS = [
    TestRecord("o-1", {"customer": "ann", "amount": 30}, T0),
    TestRecord("o-2", {"customer": "bob", "amount": 12}, T0 + 1 * MINUTE),
    TestRecord("o-3", {"customer": "cid", "amount": 99}, T0 + 2 * MINUTE),
]
SAMPLE_PAYMENTS = [
    TestRecord("o-1", {"amount": 30}, T0 + 4 * MINUTE),
    TestRecord("o-2", {"amount": 10}, T0 + 9 * MINUTE),
    TestRecord("o-3", {"amount": 99}, T0 + 15 * MINUTE),  # too late for o-3, whose window it closes
    TestRecord("o-9", {"amount": 1}, T0 + 20 * MINUTE),
]


def main() -> None:
    with TopologyTestDriver(build_topology(), {"application_id": "orders"}) as driver:
        driver.create_input_topic(ORDERS, Serdes.string(), Serdes.json()).pipe_records(
            SAMPLE_ORDERS
        )
        payments = driver.create_input_topic(PAYMENTS, Serdes.string(), Serdes.json())
        for payment in SAMPLE_PAYMENTS:
            payments.pipe_input(payment)
        for key, status in driver.create_output_topic(
            STATUS, Serdes.string(), Serdes.json()
        ).read_key_values_to_list():
            print(f"{STATUS}: {key} {status}")


if __name__ == "__main__":
    main()

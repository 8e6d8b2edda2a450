import subprocess
import sys
from pathlib import Path

from headrace.dsl import Serdes
from headrace.examples.orders_payments import (
    MINUTE,
    ORDERS,
    PAYMENTS,
    SAMPLE_ORDERS,
    SAMPLE_PAYMENTS,
    STATUS,
    T0,
    build_topology,
)
from headrace.streams.testing import TestRecord, TopologyTestDriver

S, J = Serdes.string(), Serdes.json()


def test_orders_are_paid_short_or_unpaid_and_unpaid_ones_wait_for_their_window() -> None:
    with TopologyTestDriver(build_topology(), {"application_id": "op"}) as driver:
        orders = driver.create_input_topic(ORDERS, S, J)
        payments = driver.create_input_topic(PAYMENTS, S, J)
        status = driver.create_output_topic(STATUS, S, J)
        orders.pipe_records(SAMPLE_ORDERS)
        assert status.is_empty()  # no order's window has closed: nothing is unpaid yet
        for payment in SAMPLE_PAYMENTS[:2]:
            payments.pipe_input(payment)
        assert [(k, v["status"]) for k, v in status.read_key_values_to_list()] == [
            ("o-1", "paid"),
            ("o-2", "short"),
        ]
        # o-3 waits until time passes its window's end (12 min) plus 30 s of grace
        payments.pipe_input(TestRecord("x", {"amount": 0}, T0 + 12 * MINUTE + 30_000))
        assert status.is_empty()
        payments.pipe_input(SAMPLE_PAYMENTS[2])  # o-3's payment, too late: it closes o-3
        assert status.read_key_values_to_list() == [
            ("o-3", {"order": "o-3", "customer": "cid", "amount": 99, "status": "unpaid"}),
        ]
        payments.pipe_input(SAMPLE_PAYMENTS[3])
        assert status.is_empty()


def test_a_payment_up_to_a_minute_early_or_slightly_out_of_order_still_counts() -> None:
    with TopologyTestDriver(build_topology(), {"application_id": "op"}) as driver:
        orders = driver.create_input_topic(ORDERS, S, J)
        payments = driver.create_input_topic(PAYMENTS, S, J)
        payments.pipe_input(TestRecord("o-1", {"amount": 5}, T0 - 50_000))  # before the order
        orders.pipe_input(TestRecord("o-1", {"customer": "ann", "amount": 5}, T0))
        orders.pipe_input(TestRecord("o-2", {"customer": "bob", "amount": 5}, T0 + 5 * MINUTE))
        orders.pipe_input(TestRecord("o-3", {"customer": "cid", "amount": 5}, T0 + 2 * MINUTE))
        payments.pipe_input(
            TestRecord("o-3", {"amount": 5}, T0 + 3 * MINUTE)
        )  # behind, window open
        orders.pipe_input(TestRecord("o-4", {"customer": "dan", "amount": 5}, T0 + 30 * MINUTE))
        # o-5 is older than every open window: it is reported unpaid at once
        orders.pipe_input(TestRecord("o-5", {"customer": "eve", "amount": 5}, T0))
        out = driver.create_output_topic(STATUS, S, J).read_key_values_to_list()
        assert [(k, v["status"]) for k, v in out] == [
            ("o-1", "paid"),
            ("o-3", "paid"),
            ("o-2", "unpaid"),
            ("o-5", "unpaid"),
        ]


def test_the_example_runs_as_a_program() -> None:
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-m", "headrace.examples.orders_payments"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert (
        "o-3 {'order': 'o-3', 'customer': 'cid', 'amount': 99, 'status': 'unpaid'}" in result.stdout
    )

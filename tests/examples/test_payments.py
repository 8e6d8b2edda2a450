"""The payments example: running balances with the count of payments they cover."""

import subprocess
import sys
from pathlib import Path

from headrace.dsl import Serdes
from headrace.examples.payments import (
    BALANCES,
    PAYMENTS,
    SAMPLE,
    app,
    apply_payment,
    build_topology,
)
from headrace.streams.testing import TestRecord, TopologyTestDriver

S = Serdes.string()


def test_each_payment_yields_the_new_balance_and_how_many_payments_it_covers() -> None:
    with TopologyTestDriver(build_topology(), {"application_id": "payments"}) as driver:
        driver.create_input_topic(PAYMENTS, S, S).pipe_records(SAMPLE)
        out = driver.create_output_topic(BALANCES, S, S).read_key_values_to_list()
    by_account: dict[str, list[str]] = {}
    for account, balance in out:
        by_account.setdefault(account, []).append(balance)
    assert by_account == {"acct-1": ["1000,1", "700,2", "745,3"], "acct-2": ["250,1"]}


def test_the_store_holds_each_accounts_balance_and_count() -> None:
    with TopologyTestDriver(build_topology(), {"application_id": "payments"}) as driver:
        payments = driver.create_input_topic(PAYMENTS, S, S)
        payments.pipe_input(TestRecord("a", "5"))
        payments.pipe_input(TestRecord("a", "-7"))
        store = driver.get_key_value_store("balances")
        assert store.get("a") == "-2,2"


def test_the_app_asks_for_exactly_once() -> None:
    assert app.settings.processing_guarantee == "exactly_once_v2"
    assert app.settings.commit_interval == 100
    assert apply_payment("a", "-300", "1000,1") == "700,2"


def test_running_it_prints_the_sample_balances() -> None:
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "headrace.examples.payments"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "balances: acct-1 745,3" in done.stdout

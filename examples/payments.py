"""Running account balances, exactly once.

Payments arrive on ``payments``, keyed by account, each value the amount in cents as
a decimal string (``"1250"``, ``"-300"``). The topology

1. sums the amounts per account in the RocksDB store ``balances`` (changelogged, not
   cached, so every payment yields one update),
2. writes every new balance to ``balances`` as ``"<balance>,<payments>"``: the running
   sum and how many payments it covers, keyed by account.

Run it under ``processing_guarantee="exactly_once_v2"`` and a read_committed reader of
``balances`` sees, for every account, the running sums in order, each payment counted
once, whatever crashes happen on the way. Under ``at_least_once`` a crash replays the
payments since the last commit on top of state that already holds them, and the
balances count those payments twice.

Run ``python -m headrace.examples.payments`` to pipe sample payments through the test driver, or
``headrace run examples/payments.py:app`` against a broker with a ``payments`` topic.
"""

from __future__ import annotations

from headrace import App, Serdes, StreamsBuilder, Topology, materialized
from headrace.testing import TestRecord, TopologyTestDriver

PAYMENTS, BALANCES, STORE = "payments", "balances", "balances"


def apply_payment(account: str, amount: str, balance: str) -> str:
    """``"<balance>,<payments>"`` after adding ``amount`` to ``balance``."""
    total, count = balance.split(",")
    return f"{int(total) + int(amount)},{int(count) + 1}"


def build(
    builder: StreamsBuilder | None = None, source: str = PAYMENTS, sink: str = BALANCES
) -> StreamsBuilder:
    builder = builder or StreamsBuilder()
    string = Serdes.string()
    (
        builder.stream(source, key_serde=string, value_serde=string)
        .group_by_key()
        .aggregate(
            lambda: "0,0",
            apply_payment,
            materialized=materialized(STORE).with_value_serde(string).with_caching_disabled(),
        )
        .to_stream()
        .to(sink, key_serde=string, value_serde=string)
    )
    return builder


def build_topology() -> Topology:
    return build().build()


app = App("payments", build_topology, processing_guarantee="exactly_once_v2")

SAMPLE = [
    TestRecord("acct-1", "1000"),
    TestRecord("acct-2", "250"),
    TestRecord("acct-1", "-300"),
    TestRecord("acct-1", "45"),
]


def main() -> None:
    with TopologyTestDriver(build_topology(), {"application_id": "payments"}) as driver:
        driver.create_input_topic(PAYMENTS, Serdes.string(), Serdes.string()).pipe_records(SAMPLE)
        out = driver.create_output_topic(BALANCES, Serdes.string(), Serdes.string())
        for account, balance in out.read_key_values_to_list():
            print(f"{BALANCES}: {account} {balance}")


if __name__ == "__main__":
    main()

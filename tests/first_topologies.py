"""Three first topologies, written as a new user writes them: serdes where records enter
and leave, none on any internal step (repartition topics, changelogs, stores).

Run in the test driver by ``tests/dsl/test_first_topologies.py`` and under ``headrace run
tests/first_topologies.py:<name>`` against the broker by
``tests/streams/runtime/test_first_topologies_run.py``; both check the same results.
"""

from __future__ import annotations

from headrace import App, Serdes, StreamsBuilder

S, L = Serdes.string(), Serdes.long()

LINES, WORD_COUNTS = "first-lines", "first-word-counts"
USERS, REGION_COUNTS = "first-users", "first-region-counts"
PAYMENTS, TOTALS = "first-payments", "first-totals"


def word_count() -> StreamsBuilder:
    """Words of each line, re-keyed by word (a repartition topic), counted."""
    builder = StreamsBuilder()
    (
        builder.stream(LINES, value_serde=S)
        .flat_map_values(lambda line: line.lower().split())
        .group_by(lambda _key, word: word)
        .count()
        .to_stream()
        .to(WORD_COUNTS, key_serde=S, value_serde=L)
    )
    return builder


def region_counts() -> StreamsBuilder:
    """A table of user -> region re-grouped by region: users per region, a user who moves
    or leaves counting down where they were. The sink takes the App's default serdes."""
    builder = StreamsBuilder()
    (
        builder.table(USERS, key_serde=S, value_serde=S)
        .group_by(lambda user, region: (region, user))
        .count()
        .to_stream()
        .to(REGION_COUNTS)
    )
    return builder


region_counts_app = App("first-regions", region_counts, default_key_serde=S, default_value_serde=L)
"""``region_counts`` as an App, whose default serdes its sink uses."""


def payment_totals() -> StreamsBuilder:
    """Payments (JSON, keyed by payment id) re-keyed by account, amounts summed with
    ``aggregate``: ints in the store and the repartition topic with no serde given."""
    builder = StreamsBuilder()
    (
        builder.stream(PAYMENTS, key_serde=S, value_serde=Serdes.json())
        .map(lambda _payment, p: (p["account"], p["amount"]))
        .group_by_key()
        .aggregate(lambda: 0, lambda _account, amount, total: total + amount)
        .to_stream()
        .to(TOTALS, key_serde=S, value_serde=L)
    )
    return builder


# What goes in, and what each topology's sink holds per key once it has all been read.
LINES_IN = ["The cat sat", "the dog sat", "a cat and a dog"]
WORD_COUNTS_OUT = {"the": 2, "cat": 2, "sat": 2, "dog": 2, "a": 2, "and": 1}

USERS_IN: list[tuple[str, str | None]] = [
    ("alice", "eu"),
    ("bob", "us"),
    ("carol", "eu"),
    ("dave", "apac"),
    ("alice", "us"),  # moves: eu counts her down, us up
    ("bob", None),  # leaves: us counts him down
]
REGION_COUNTS_OUT = {"eu": 1, "us": 1, "apac": 1}

PAYMENTS_IN = [
    ("p1", {"account": "acc-1", "amount": 5}),
    ("p2", {"account": "acc-2", "amount": 7}),
    ("p3", {"account": "acc-1", "amount": 10}),
    ("p4", {"account": "acc-3", "amount": -2}),
    ("p5", {"account": "acc-2", "amount": 2**40}),
]
TOTALS_OUT = {"acc-1": 15, "acc-2": 7 + 2**40, "acc-3": -2}

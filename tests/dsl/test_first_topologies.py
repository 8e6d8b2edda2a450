"""The three first topologies of ``tests/first_topologies.py`` in the test driver: no serde
on any internal step, exact results, and the sink rule for a ``to()`` without serdes."""

from __future__ import annotations

import pytest
from first_topologies import (
    LINES,
    LINES_IN,
    PAYMENTS,
    PAYMENTS_IN,
    REGION_COUNTS,
    REGION_COUNTS_OUT,
    TOTALS,
    TOTALS_OUT,
    USERS,
    USERS_IN,
    WORD_COUNTS,
    WORD_COUNTS_OUT,
    L,
    S,
    payment_totals,
    region_counts,
    region_counts_app,
    word_count,
)

from headrace import Serdes
from headrace.streams import TopologyError
from headrace.testing import TopologyTestDriver

APP = {"application_id": "first"}


def test_word_count_with_group_by_counts_every_word() -> None:
    topology = word_count().build()
    (repartition,) = topology.internal_topics
    with TopologyTestDriver(topology, APP) as driver:
        lines = driver.create_input_topic(LINES, None, S)
        for line in LINES_IN:
            lines.pipe_input(None, line)
        out = driver.create_output_topic(WORD_COUNTS, S, L).read_key_values_to_list()
        # one update per word per line, as each line is settled before the next (the
        # store's cache folds the two "a" of the last line into one update)
        assert sorted(out) == sorted(
            [
                ("the", 1),
                ("cat", 1),
                ("sat", 1),
                ("the", 2),
                ("dog", 1),
                ("sat", 2),
                ("a", 2),
                ("cat", 2),
                ("and", 1),
                ("dog", 2),
            ]
        )
        assert dict(out) == WORD_COUNTS_OUT
        # the words crossed the repartition topic with the auto serde
        repartitioned = driver.create_output_topic(
            f"first-{repartition}", Serdes.auto(), Serdes.auto()
        ).read_key_values_to_list()
        assert repartitioned[:3] == [("the", "the"), ("cat", "cat"), ("sat", "sat")]


def test_table_regrouping_counts_down_where_a_row_leaves() -> None:
    config = {**APP, "default_key_serde": S, "default_value_serde": L}
    with TopologyTestDriver(region_counts().build(), config) as driver:
        users = driver.create_input_topic(USERS, S, S)
        for user, region in USERS_IN:
            users.pipe_input(user, region)
        out = driver.create_output_topic(REGION_COUNTS, S, L).read_key_values_to_list()
        assert out == [
            ("eu", 1),
            ("us", 1),
            ("eu", 2),
            ("apac", 1),
            ("eu", 1),
            ("us", 2),  # alice moved: out of eu, into us
            ("us", 1),  # bob left
        ]
        assert dict(out) == REGION_COUNTS_OUT


def test_the_app_object_carries_the_default_serdes_the_sink_needs() -> None:
    key, value = region_counts_app.default_key_serde, region_counts_app.default_value_serde
    config = {**APP, "default_key_serde": key, "default_value_serde": value}
    with TopologyTestDriver(region_counts().build(), config) as driver:
        driver.create_input_topic(USERS, S, S).pipe_input("erin", "eu")
        assert driver.create_output_topic(REGION_COUNTS, S, L).read_key_value() == ("eu", 1)


def test_table_regrouping_without_default_serdes_fails_when_the_driver_opens() -> None:
    with pytest.raises(TopologyError) as info:
        TopologyTestDriver(region_counts().build(), APP)
    message = str(info.value)
    assert f"topic '{REGION_COUNTS}'" in message and "KSTREAM-SINK-" in message
    assert "no key serde" in message
    assert "no value serde" not in message  # count() gives its values a serde


def test_aggregate_sums_ints_per_account() -> None:
    with TopologyTestDriver(payment_totals().build(), APP) as driver:
        payments = driver.create_input_topic(PAYMENTS, S, Serdes.json())
        for payment_id, payment in PAYMENTS_IN:
            payments.pipe_input(payment_id, payment)
        out = driver.create_output_topic(TOTALS, S, L).read_key_values_to_list()
        assert out == [
            ("acc-1", 5),
            ("acc-2", 7),
            ("acc-1", 15),
            ("acc-3", -2),
            ("acc-2", 7 + 2**40),
        ]
        assert dict(out) == TOTALS_OUT

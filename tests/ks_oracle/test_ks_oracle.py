"""Kafka Streams 4.4 as the oracle: each topology written twice, in Kafka Streams and
in headrace, run over the same seeded records in both TopologyTestDriver, must write the
same records (keys, values, timestamps), in the same order per output topic and key.

A case listed in ``differences.KNOWN`` is a strict xfail: expected to differ, and
failing the day it agrees, so that list stays the true list of differences.

The JVM runs once per session, every case in one batch (``oracle.run_kafka_streams``);
each test then runs headrace's half of one case and compares. Without Java or the jars
of ``jvm/pom.xml`` these tests fail, saying how to get them.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from ks_oracle.differences import ALL_DIFFERENCES, KNOWN, known_difference
from ks_oracle.inputs import FAR_FUTURE, generate
from ks_oracle.oracle import (
    SEEDS,
    all_cases,
    case_name,
    differences,
    minimal_name,
    run_headrace,
    run_kafka_streams,
)
from ks_oracle.pairs import PAIRS


def _case(pair_id: str, seed: int) -> object:
    """A case, marked as a strict xfail when ``differences.KNOWN`` lists it."""
    reason = known_difference(pair_id, seed)
    if reason is None:
        return pytest.param(pair_id, seed, id=f"{pair_id}-{seed}")
    mark = pytest.mark.xfail(strict=True, reason=f"differs from Kafka Streams: {reason}")
    return pytest.param(pair_id, seed, id=f"{pair_id}-{seed}", marks=mark)


@pytest.fixture(scope="session")
def kafka_streams(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    return run_kafka_streams(tmp_path_factory.mktemp("ks-oracle"))


@pytest.mark.parametrize(("pair_id", "seed"), [_case(*case) for case in all_cases()])
def test_headrace_writes_what_kafka_streams_writes(
    pair_id: str, seed: int, kafka_streams: dict[str, dict[str, Any]]
) -> None:
    p = PAIRS[pair_id]
    result = kafka_streams[case_name(pair_id, seed)]
    assert "error" not in result, f"Kafka Streams' half of {pair_id} failed:\n{result['error']}"
    records = generate(p, seed)
    found = differences(result["outputs"], run_headrace(p, records))
    assert not found, f"{pair_id} (seed {seed}): {p.doc}\ninput {records}\n" + "\n".join(found[:8])


EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def test_datetimes_are_piped_as_their_milliseconds(
    kafka_streams: dict[str, dict[str, Any]],
) -> None:
    """The same records piped with datetimes 0.7 ms past each timestamp: Kafka's
    ``Instant.toEpochMilli`` drops the fraction, so Kafka Streams' output is still the
    answer."""
    p = PAIRS["filter_map_values"]
    records = generate(p, 1)
    late_by_a_fraction = run_headrace(
        p, records, lambda ms: EPOCH + timedelta(milliseconds=ms, microseconds=700)
    )
    assert not differences(kafka_streams[case_name(p.id, 1)]["outputs"], late_by_a_fraction)


def test_there_are_at_least_thirty_pairs_and_each_writes_something(
    kafka_streams: dict[str, dict[str, Any]],
) -> None:
    """A pair whose Kafka Streams half writes nothing for any seed would compare nothing."""
    assert len(PAIRS) >= 30
    silent = [
        pair_id
        for pair_id in PAIRS
        if not any(
            rows
            for seed in SEEDS
            for rows in kafka_streams[case_name(pair_id, seed)].get("outputs", {}).values()
        )
    ]
    assert not silent


def test_inputs_are_reproducible_and_carry_the_nasty_cases() -> None:
    p = PAIRS["tumbling_count"]
    assert generate(p, 1) == generate(p, 1) and generate(p, 1) != generate(p, 2)
    for seed in SEEDS:
        records = generate(p, seed)
        stamps = [ts for *_, ts in records]
        assert any(b < a for a, b in itertools.pairwise(stamps)), "out of order"
        assert any(max(stamps[:i]) - ts > 500 for i, ts in enumerate(stamps) if i), "past grace"
        assert any(ts % 250 == 0 for ts in stamps), "a record exactly on a window edge"
        assert stamps[-1] - max(stamps[:-1]) >= FAR_FUTURE, "a far-future record at the end"
    everything = [r for seed in SEEDS for r in generate(p, seed)]
    assert any(k is None for _, k, _, _ in everything), "null keys"
    assert any(v is None for *_, v, _ in everything), "null values"
    assert len(set(everything)) < len(everything), "duplicates"
    assert any(ts % 1000 == 0 for *_, ts in everything), "a record on a 1000 ms window's edge"
    assert any(
        a[1] == b[1] == c[1] and c[3] - a[3] <= 2
        for a, b, c in zip(everything, everything[1:], everything[2:], strict=False)
    ), "a burst of one key in one window"
    tables = [r for seed in SEEDS for r in generate(PAIRS["tt_outer"], seed)]
    assert any(v is None for *_, v, _ in tables), "tombstones"


def test_the_comparison_sees_a_changed_timestamp_and_a_changed_order() -> None:
    ks = {"out": [["a", 1, 10], ["b", 1, 11], ["a", 2, 12]]}
    assert differences(ks, {"out": [["b", 1, 11], ["a", 1, 10], ["a", 2, 12]]}) == []
    assert differences(ks, {"out": [["a", 2, 12], ["b", 1, 11], ["a", 1, 10]]})
    assert differences(ks, {"out": [["a", 1, 10], ["b", 1, 12], ["a", 2, 12]]})
    assert differences(ks, {"out": [["a", 1, 10], ["a", 2, 12]]})


def test_each_listed_difference_still_shows_on_its_minimal_input(
    kafka_streams: dict[str, dict[str, Any]],
) -> None:
    """A difference listed in differences.py must still show on its minimal input: the day
    headrace follows the rule this fails until the entry is removed, so the list stays the
    true list (today it is empty: every pair agrees)."""
    agreeing = []
    for difference in ALL_DIFFERENCES:
        result = kafka_streams[minimal_name(difference)]
        assert "error" not in result, result.get("error")
        outputs = run_headrace(PAIRS[difference.pair], list(difference.records))
        if not differences(result["outputs"], outputs):
            agreeing.append(difference.name)
    assert not agreeing, f"these agree now, remove them from differences.py: {agreeing}"


def test_known_differences_name_registered_pairs_and_seeds() -> None:
    assert set(KNOWN) <= set(PAIRS) and {d.pair for d in ALL_DIFFERENCES} <= set(PAIRS)
    listed = {d for known in KNOWN.values() for d in known.differences}
    assert listed <= set(ALL_DIFFERENCES)
    assert all(set(k.seeds) <= set(SEEDS) and k.differences for k in KNOWN.values())


def test_the_java_sources_name_every_pair() -> None:
    java = (Path(__file__).parent / "KsTopologies.java").read_text()
    missing = [pair_id for pair_id in PAIRS if f'case "{pair_id}"' not in java]
    assert not missing

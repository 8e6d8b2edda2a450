"""Where headrace does not yet write what Kafka Streams writes, pair by pair.

Each case listed in ``KNOWN`` is expected to differ (a strict xfail): the day it agrees, its
test fails until the entry is removed, so this list stays the true list of differences.
Each difference names Kafka Streams' rule and the source file it comes from, and a
minimal input that shows it, run through both halves as a case of its own (some
differences show only there: the seeded inputs happen not to hit them).
"""

from __future__ import annotations

from dataclasses import dataclass

from ks_oracle.inputs import Record


@dataclass(frozen=True)
class Difference:
    """A rule of Kafka Streams headrace does not follow yet, and a minimal input of a pair
    that shows it: ``(topic, key, value, timestamp)`` records, run through both halves
    (``test_each_difference_shows_on_its_minimal_input``)."""

    name: str
    rule: str
    pair: str
    records: tuple[Record, ...]


ALL_DIFFERENCES: tuple[Difference, ...] = ()


@dataclass(frozen=True)
class Known:
    differences: tuple[Difference, ...]
    seeds: tuple[int, ...] = (1, 2, 3)


KNOWN: dict[str, Known] = {}


def known_difference(pair_id: str, seed: int) -> str | None:
    """Why this case is expected to differ, or ``None`` if it must agree."""
    known = KNOWN.get(pair_id)
    if known is None or seed not in known.seeds:
        return None
    return "; ".join(d.name for d in known.differences)

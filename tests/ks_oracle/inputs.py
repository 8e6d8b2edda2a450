"""Seeded inputs carrying what breaks stream processors.

One list of ``(topic, key, value, timestamp)`` per pair and seed, piped in that order
into both drivers. Timestamps move on by steps that land on and beside window edges
(the pairs' windows are 250 to 1000 ms), and now and then step back: a little (inside
grace), a lot (past it), or to an exact window edge. Keys come from a small pool, so
duplicate keys are the rule; some are null, and some values are null (tombstones, for a
table). Bursts put several records of one key into one window. A pair whose windows
must close ends with a far-future record on each of its streams.
"""

from __future__ import annotations

import random
from typing import Any

from ks_oracle.pairs import Pair, Source

Record = tuple[str, Any, Any, int]

RECORDS = 40
START = 10_000
FAR_FUTURE = 1_000_000
STEPS = (0, 1, 49, 100, 199, 250, 300, 499, 500, 501, 999, 1000, 1700)
SMALL_BACK = (1, 50, 100, 150, 199, 250)
LARGE_BACK = (600, 1000, 1500, 2600, 4000)
EDGES = (250, 500, 1000)


def _key(rng: random.Random, source: Source) -> Any:
    return None if rng.random() < 0.07 else rng.choice(source.keys)


def _value(rng: random.Random, source: Source) -> Any:
    return None if rng.random() < (0.15 if source.table else 0.07) else rng.choice(source.values)


def generate(p: Pair, seed: int) -> list[Record]:
    """The records of ``p`` for ``seed``: the same on every run and on every machine."""
    rng = random.Random(f"{p.id}/{seed}")
    topics = list(p.sources)
    clock = START
    records: list[Record] = []
    while len(records) < RECORDS:
        topic = rng.choice(topics)
        source = p.sources[topic]
        roll = rng.random()
        if roll < 0.5:
            clock += rng.choice(STEPS)
            ts = clock
        elif roll < 0.65:
            ts = clock - rng.choice(SMALL_BACK)
        elif roll < 0.75:
            ts = clock - rng.choice(LARGE_BACK)
        elif roll < 0.85:
            edge = rng.choice(EDGES)
            ts = (clock // edge + rng.choice((-1, 0, 1))) * edge + rng.choice((0, 0, -1))
            clock = max(clock, ts)
        elif roll < 0.93:
            # a burst: one key, several records in a few ms, into one window
            key = _key(rng, source)
            for i in range(rng.randint(2, 4)):
                records.append((topic, key, _value(rng, source), clock + i))
            clock += 3
            continue
        else:
            # an exact duplicate of an earlier record of any topic
            if records:
                records.append(rng.choice(records))
            continue
        records.append((topic, _key(rng, source), _value(rng, source), max(0, ts)))
    if p.closes:
        end = max(ts for *_, ts in records) + FAR_FUTURE
        for topic, source in p.sources.items():
            if not source.table:
                records.append((topic, "zz", source.values[0], end))
    return records

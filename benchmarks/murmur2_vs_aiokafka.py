"""Kafka's key hash, ours (streams/runtime/_murmur2.py) against the one aiokafka ships.

Both are pure Python; the runtime hashes every keyed record it sends to a partition it
has not memoised, so the faster one stays. Prints nanoseconds per key for each, on the
same random keys, alternating, and the machine's load.

    .venv/bin/python benchmarks/murmur2_vs_aiokafka.py [--keys 5000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from collections.abc import Callable

from aiokafka.partitioner import murmur2 as aiokafka_murmur2

from headrace.streams.runtime._murmur2 import murmur2


def per_key_ns(hash_key: Callable[[bytes], int], keys: list[bytes]) -> float:
    started = time.perf_counter_ns()
    for key in keys:
        hash_key(key)
    return (time.perf_counter_ns() - started) / len(keys)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(7)
    keys = [rng.randbytes(rng.randint(4, 40)) for _ in range(args.keys)]
    for key in keys:  # the same function, or the comparison means nothing
        assert murmur2(key) & 0xFFFFFFFF == aiokafka_murmur2(key) & 0xFFFFFFFF
    ours, theirs = [], []
    for _ in range(args.rounds):
        ours.append(per_key_ns(murmur2, keys))
        theirs.append(per_key_ns(aiokafka_murmur2, keys))
    ours_ns, theirs_ns = statistics.median(ours), statistics.median(theirs)
    print(f"load {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"headrace  {ours_ns:8.0f} ns/key")
    print(f"aiokafka  {theirs_ns:8.0f} ns/key   ({theirs_ns / ours_ns:.2f}x headrace's time)")


if __name__ == "__main__":
    main()

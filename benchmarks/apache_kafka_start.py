"""How long an Apache Kafka 4.4 KRaft cluster takes to come up on this machine, through
the launcher the tests use (tests/apache_kafka.py), and to stop.

    .venv/bin/python benchmarks/apache_kafka_start.py [--sizes 1 3] [--rounds 2]

For each size, each round: a fresh cluster (data dirs formatted with Kafka's storage
tool, one JVM per node with -Xmx512m) from launch until every node's Metadata answer
lists every node; then a SIGTERM stop, timed until every JVM has exited. Needs the jars
of jvm/pom.xml (``scripts/dev test`` resolves them once).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from apache_kafka import KafkaCluster


def one_round(size: int) -> tuple[float, float]:
    root = Path(tempfile.mkdtemp(prefix=f"kafka{size}-"))
    try:
        started = time.monotonic()
        cluster = KafkaCluster(root, size).start()
        ready = time.monotonic() - started
        started = time.monotonic()
        cluster.stop()
        return ready, time.monotonic() - started
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    print(f"{'nodes':>5}  {'ready (s)':>10}  {'stopped (s)':>11}")
    for size in args.sizes:
        times = [one_round(size) for _ in range(args.rounds)]
        ready = statistics.median(t[0] for t in times)
        stopped = statistics.median(t[1] for t in times)
        print(f"{size:>5}  {ready:>10.1f}  {stopped:>11.1f}")


if __name__ == "__main__":
    main()

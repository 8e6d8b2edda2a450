"""Wall time of `headrace` commands that return at once: the median of 10 runs of each.

`--version`, `--help` and the client commands' help should start in well under a second,
as they import only the command they run (headrace.cli). Run:

    .venv/bin/python benchmarks/cli_startup.py [--runs N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS = (
    ["--version"],
    ["--help"],
    ["topics", "--help"],
    ["topics", "list", "--help"],
    ["configs", "--help"],
    ["produce", "--help"],
    ["consume", "--help"],
    ["groups", "--help"],
    ["users", "--help"],
    ["acls", "--help"],
    ["run", "--help"],
    ["broker", "--help"],
)


def wall_seconds(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "headrace", *argv], check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    runs = parser.parse_args().runs
    bare = statistics.median(_timed([sys.executable, "-c", "pass"]) for _ in range(runs))
    print(f"{'python -c pass':<28} {bare * 1000:7.0f} ms")
    for argv in COMMANDS:
        median = statistics.median(wall_seconds(argv) for _ in range(runs))
        print(f"{'headrace ' + ' '.join(argv):<28} {median * 1000:7.0f} ms")


def _timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - start


if __name__ == "__main__":
    main()

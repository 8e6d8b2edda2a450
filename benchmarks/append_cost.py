"""CPU cost of a produced record in ``PartitionLog.append``, record checks included.

    .venv/bin/python benchmarks/append_cost.py [--baseline-python OTHER/.venv/bin/python]
        [--records 100000] [--batch 1000] [--repeats 5]

Appends batches of 1,000 records of 100 bytes to a fresh partition log, as a produce
does after parsing its request (a fresh bytearray each, no fsync), with text values
(one repeated letter) and random ones, and reports the best of 5 CPU times per record:
for this checkout once per record walker it can use (the broker picks one at import,
``_record_walk``; here it is set for the measurement), and for the checkout
``--baseline-python`` runs. Every measurement runs in a subprocess of its own, so
another checkout is measured exactly the same way; it needs only
``PartitionLog.open``/``append`` and ``_records.encode_batch``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

VALUES = ("text", "random")


def measure(values: str, walker: str | None, records: int, batch: int, repeats: int) -> float:
    """Best CPU microseconds per record over ``repeats`` runs, in this process."""
    from headrace.log_broker.records import _batches as _records
    from headrace.log_broker.storage import PartitionLog, TopicConfig

    if walker is not None:
        from headrace.log_broker.records import _walk as _record_walk

        _record_walk._walker = walker
        assert _record_walk.record_walker() == walker, f"no {walker} walker here"
    random = values == "random"
    template = _records.encode_batch(
        [
            _records.Record(
                i, 1_700_000_000_000 + i, None, os.urandom(100) if random else b"x" * 100
            )
            for i in range(batch)
        ]
    )
    best = float("inf")
    for _ in range(repeats):
        payloads = [bytearray(template) for _ in range(records // batch)]
        with tempfile.TemporaryDirectory() as directory:
            log = PartitionLog.open(Path(directory) / "bench-0", "bench", 0, TopicConfig())
            started = time.process_time()
            for payload in payloads:
                log.append(payload, now_ms=0)
            best = min(best, time.process_time() - started)
            log.close()
    return best / (len(payloads) * batch) * 1e6


def walkers(python: str) -> list[str | None]:
    """The record walkers ``python``'s checkout has; [None] for one that predates them."""
    program = (
        "try:\n"
        "    from headrace.log_broker.records import _walk as w\n"
        "except ImportError:\n"
        "    from headrace.log_broker import _record_walk as w\n"
        "for name in (w.COMPILED, w.AIOKAFKA, w.PYTHON):\n"
        "    w._walker = name\n"
        "    if w.record_walker() == name:\n"
        "        print(name)\n"
    )
    # run from "/", not a checkout, whose folders `-c` would import before the install
    found = subprocess.run([python, "-c", program], capture_output=True, text=True, cwd="/")
    return list(found.stdout.split()) if found.returncode == 0 else [None]


def run(python: str, values: str, walker: str | None, args: argparse.Namespace) -> float:
    command = [python, __file__, "--measure", values, "--records", str(args.records)]
    command += ["--batch", str(args.batch), "--repeats", str(args.repeats)]
    if walker is not None:
        command += ["--walker", walker]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return float(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--baseline-python", metavar="PYTHON")
    parser.add_argument("--measure", choices=VALUES, help=argparse.SUPPRESS)
    parser.add_argument("--walker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(measure(args.measure, args.walker, args.records, args.batch, args.repeats))
        return
    print(
        f"PartitionLog.append, {args.batch:,}-record batches of 100-byte values,"
        f" {args.records:,} records, best of {args.repeats} (CPU us a record)"
    )
    pythons = [("this checkout", sys.executable)]
    if args.baseline_python:  # absolute: walkers() runs it from "/"
        pythons.append((args.baseline_python, os.path.abspath(args.baseline_python)))
    for values in VALUES:
        for name, python in pythons:
            for walker in walkers(python):
                cost = run(python, values, walker, args)
                label = f"{name} ({walker} walker)" if walker else name
                print(f"{values:<7} {label:<60} {cost:6.3f}", flush=True)


if __name__ == "__main__":
    main()

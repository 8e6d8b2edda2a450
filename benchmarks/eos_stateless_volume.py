"""A stateless exactly-once App over a 1M-record backlog, checked exactly once.

The job of ``tests/streams/runtime/stateless_eos_job.py``: ``stream -> filter ->
map_values -> to`` over JSON records on 8 partitions, an App in this process under
``exactly_once_v2`` with default settings, run until its group committed the whole
input; a read_committed reader then checks that every kept record's output is there
exactly once, mapped right, and nothing else is. Each run has a fresh built-in broker (a
subprocess). Such a run used to stop at its start with ``Invalid state transition
IN_TRANSACTION -> IN_TRANSACTION`` (two callers beginning one transaction;
``streams/runtime/_aiokafka_txn.py``). The test suite runs 200,000 padded records
(``tests/streams/runtime/test_eos_stateless_volume.py``).

Run: ``.venv/bin/python benchmarks/eos_stateless_volume.py [--records 1000000]
[--pad 0] [--runs 3]``. Prints, per run, the time from the App's start until the input
was committed and any problem; exit status 1 if any run failed or was not exact.
"""

from __future__ import annotations

import argparse
import asyncio
import pathlib
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests" / "streams" / "runtime"))

import stateless_eos_job as job  # noqa: E402
from bench_broker import broker_process  # noqa: E402

SOURCE, SINK = "volume-in", "volume-out"


async def one_run(bootstrap: str, workdir: pathlib.Path, records: int, pad: int) -> list[str]:
    await job.create_topics(bootstrap, SOURCE, SINK)
    started = time.monotonic()
    await asyncio.to_thread(job.produce, bootstrap, SOURCE, records, pad)
    produced = time.monotonic() - started
    run = await job.run_app(bootstrap, workdir / "state", "volume", SOURCE, SINK, records, wait=600)
    if run.failure is not None:
        print(
            f"  input {produced:.1f} s; the App failed after {run.seconds:.1f} s: {run.failure!r}"
        )
        return [f"the App failed: {run.failure!r}"]
    values = await job.read_output(bootstrap, SINK)
    problems = job.problems(values, records)
    print(
        f"  input {produced:.1f} s; processed in {run.seconds:.1f} s "
        f"({records / run.seconds:,.0f} records/s); {len(values):,} outputs; "
        + ("exact" if not problems else "; ".join(problems))
    )
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--pad", type=int, default=0, help="padding bytes per input value")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    failed = 0
    for n in range(1, args.runs + 1):
        print(f"run {n} of {args.runs}: {args.records:,} records", flush=True)
        with tempfile.TemporaryDirectory(prefix="eos-volume-") as tmp:
            workdir = pathlib.Path(tmp)
            with broker_process(workdir) as bootstrap:
                if asyncio.run(one_run(bootstrap, workdir, args.records, args.pad)):
                    failed += 1
    print(f"{args.runs - failed} of {args.runs} runs exact")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

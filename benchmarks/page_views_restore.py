"""Final windowed counts through two SIGKILLs, at volume: the page-views job of
``tests/streams/runtime/page_views_job.py`` (``headrace.examples.page_views`` under
exactly_once_v2, idle close 2 s) with 300,000 views: 10 minutes of event time, 50
pages, each page's views of a minute together. Killed once its counting task has
committed 20% of the views and restarted on the same state directory (snapshot plus
changelog tail), killed again at 45% and restarted on an emptied one (the whole
changelog); a read_committed reader then checks every window's final count against
the input. Each run has a fresh built-in broker (a subprocess).

Run: ``.venv/bin/python benchmarks/page_views_restore.py [--runs 7] [--views 300000]``.
Prints, per run, the windows lost, repeated and wrong, and how long it took; exit
status 1 if any run was not exact. The test suite runs the same job with 4,000 views
(``tests/streams/runtime/test_eos_window_restore.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import pathlib
import shutil
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "tests" / "streams" / "runtime"))

from bench_broker import broker_process  # noqa: E402
from page_views_job import Job, views  # noqa: E402

PAGES, MINUTES = 50, 10


async def one_run(workdir: pathlib.Path, count: int, per_second: float, wait: float) -> bool:
    per_page = max(1, count // (PAGES * MINUTES))
    rows = views(MINUTES, PAGES, per_page)
    started = time.monotonic()
    with broker_process(workdir) as bootstrap:
        job = Job(bootstrap, workdir, "pv-restore-bench", rows, per_second=per_second)
        try:
            finals, want = await job.run(wait=wait)
        finally:
            code = job.stop()
    problems = finals.problems(want)
    exact = not any(problems.values()) and finals.records == len(want)
    print(
        f"{len(rows)} views, {len(want)} windows: {finals.records} finals read, "
        f"{len(problems['lost'])} lost, {len(problems['repeated'])} repeated, "
        f"{len(problems['wrong'])} wrong; {'; '.join(job.timeline)}; "
        f"exit {code}; {time.monotonic() - started:.0f} s",
        flush=True,
    )
    if not exact:
        for kind, found in problems.items():
            if found:
                print(f"  {kind}: {found[:6]}{' ...' if len(found) > 6 else ''}")
        trouble = [
            line for line in job.log().splitlines() if " ERROR " in line or " WARNING " in line
        ]
        print("  " + "\n  ".join(trouble[-10:]))
    return exact


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--views", type=int, default=300_000)
    parser.add_argument(
        "--per-second", type=float, default=0, help="input rate (0: produce as fast as possible)"
    )
    parser.add_argument("--wait", type=float, default=120, help="how long to wait for the finals")
    args = parser.parse_args()
    exact = 0
    for run in range(args.runs):
        tmp = pathlib.Path(tempfile.mkdtemp(prefix="pv-restore-"))
        print(f"run {run + 1}/{args.runs}: ", end="", flush=True)
        ok = False
        try:
            ok = asyncio.run(one_run(tmp, args.views, args.per_second, args.wait))
        except AssertionError as error:
            print(f"failed: {error}")
        if ok:
            shutil.rmtree(tmp)
        else:
            print(f"  logs kept in {tmp}")
        exact += ok
    print(f"{exact} of {args.runs} runs exact")
    sys.exit(0 if exact == args.runs else 1)


if __name__ == "__main__":
    main()

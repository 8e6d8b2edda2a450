"""Topics that are tables at volume: a million records into a table topic through
SIGKILLs of the broker, checked exactly once.

    .venv/bin/python benchmarks/table_topics_eos.py [--records 1000000] [--kills 5]
        [--runs 1] [--seed N]

The scenario of ``tests/table_topic_kills.py`` (which ``tests/table_topics/
test_table_eos.py`` runs on 300,000 records with 3 kills): one built-in broker
subprocess with ``--table-location`` (its table writer a child process, as users run
it), an idempotent producer paced at about 20,000 records a second into a
``key_value`` table topic of 4 partitions committing every 200 ms, and ``--kills``
SIGKILLs of the broker, each at a random point of its own stretch of the stream and,
where the timing allows, inside a table commit (after its data file, before its log
entry); the broker restarts at once. Then every acknowledged record must be in the table
exactly once, and the table must equal the topic read back read_committed.

Prints, per run: the seed, the kills (how many landed inside a commit, and the table's
rows at each), the time, the load, and "exact" or the problems; exit status 1 if any run
was not exact.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from brokerproc import BrokerProcess
from table_topic_kills import run_through_kills


def one_run(records: int, kills: int, seed: int | None) -> bool:
    with tempfile.TemporaryDirectory(prefix="table-eos-") as work:
        lake = Path(work) / "lake"
        before = os.getloadavg()[0]
        started = time.monotonic()
        with BrokerProcess(Path(work) / "data", "--table-location", str(lake)) as broker:
            try:
                outcome = run_through_kills(broker, lake, records, kills, seed)
            finally:
                broker.kill()
        seconds = time.monotonic() - started
        inside = sum(outcome.mid_commit)
        print(
            f"  seed {outcome.seed}: {outcome.acked:,} records acknowledged, "
            f"{len(outcome.rows_when_killed)} kills ({inside} inside a commit; table rows at "
            f"each: {', '.join(f'{rows:,}' for rows in outcome.rows_when_killed)}), "
            f"{seconds:.0f} s, load {before:.1f} -> {os.getloadavg()[0]:.1f}: "
            + ("exact" if not outcome.problems else "; ".join(outcome.problems)),
            flush=True,
        )
        return not outcome.problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=None, help="repeat a run's kill points")
    args = parser.parse_args()
    print(f"{args.records:,} records, {args.kills} broker SIGKILLs a run, {args.runs} run(s)")
    exact = [one_run(args.records, args.kills, args.seed) for _ in range(args.runs)]
    print(f"{sum(exact)} of {len(exact)} runs exact")
    sys.exit(0 if all(exact) else 1)


if __name__ == "__main__":
    main()

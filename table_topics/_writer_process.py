"""The table writer as a child process of the broker command (``python -m
headrace.table_topics._writer_process PARENT_PID``), so its work does not share the
broker's GIL.

It must never outlive its broker: a writer left running beside a restarted broker's new
one would commit the same records twice. Two guards, in order of speed:

1. At start it asks Linux for SIGKILL when its parent dies (``PR_SET_PDEATHSIG``), then
   checks the parent is still the one named on its command line (it may have died
   before the request was made).
2. It exits at once, committing nothing, when its stdin closes without a ``stop``.

It runs at a lower CPU priority than the broker (``WRITER_NICENESS``): the writer is
background work that catches up, while a produce waits on the broker. On a machine with
few cores the two compete for CPU, and a table topic's producers paid for it.

The conversation over the pipes, one line each:

* stdin, first line: the writer's settings as JSON (``bootstrap``, ``location``,
  ``registry_url``); the parent sends it once the registry beside the broker answers.
* stdin, later: ``stop``. The writer commits what it holds and the process exits.
* stdout, every ``REPORT_EVERY_S``: the tables' freshness as JSON, topic ->
  ``[seconds_behind, offsets_behind, rows_committed]``, which the parent serves with
  the broker's metrics. Logs go to stderr, the broker's own.
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import sys
import threading
import time
from typing import IO

from ._writer import TableWriter

WRITER_NICENESS = 10  # added to the broker's: the broker's loop comes first for the CPU
REPORT_EVERY_S = 0.2  # how stale /metrics may be, besides the commit's own time
STOP = "stop"
_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


def die_with_parent(parent_pid: int) -> None:
    """SIGKILL this process when its parent goes (Linux); exit now if it has gone."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_PDEATHSIG, 9, 0, 0, 0) != 0:  # 9: SIGKILL
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != parent_pid:  # the parent died before the request above
        os._exit(1)


def main(argv: list[str]) -> int:
    die_with_parent(int(argv[0]))
    os.nice(WRITER_NICENESS)
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    first = sys.stdin.readline().strip()
    if first in ("", STOP):  # the parent went, or stopped before sending the settings
        return 0
    settings = json.loads(first)
    writer = TableWriter(
        settings["bootstrap"], settings["location"], registry_url=settings["registry_url"]
    )
    threading.Thread(target=_follow_parent, args=(writer, sys.stdin), daemon=True).start()
    threading.Thread(target=_report, args=(writer, sys.stdout), daemon=True).start()
    print(
        f"headrace table writer: tables of table topics under {writer.location}",
        file=sys.stderr,
        flush=True,
    )
    writer.run()
    return 0


def _follow_parent(writer: TableWriter, stdin: IO[str]) -> None:
    """Guard 2: ``stop`` stops the writer cleanly; the pipe closing without it means the
    broker is gone, and the process leaves at once."""
    for line in stdin:
        if line.strip() == STOP:
            writer.stop()
            return
    os._exit(1)


def _report(writer: TableWriter, stdout: IO[str]) -> None:
    while True:
        report = {
            topic: [fresh.seconds_behind, fresh.offsets_behind, fresh.rows_committed]
            for topic, fresh in writer.freshness().items()
        }
        try:
            stdout.write(json.dumps(report) + "\n")
            stdout.flush()
        except (BrokenPipeError, ValueError):  # the parent is gone
            os._exit(1)
        time.sleep(REPORT_EVERY_S)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

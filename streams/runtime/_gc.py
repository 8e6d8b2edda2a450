"""Garbage-collector settings for a process that runs applications as its main job.

A round of the loop builds tens of thousands of small tuples (fetched records, decoded
records, produced records) that all stay alive until the round ends. With CPython's
default young-generation threshold (700 allocations) a round triggers a hundred or
more young collections that free nothing and promote the whole batch to older
generations, which later collections traverse again; in the benchmarks that was a
quarter of the process's CPU time. Reference counting frees these tuples anyway: they
form no cycles.

The threshold counts tracked objects allocated minus those freed, so it must exceed
what the loop keeps alive at its peak, not what it allocates: a record is four or
five tuples on its way through (fetched, decoded, mapped, produced), the previous
round's records are still referenced while the next is polled, and produced records
wait for their acknowledgement until the commit; with ``max_poll_records`` at 20,000
(the default is 5,000) about 100,000 tracked objects. At a threshold of 20,000 the
stateless benchmark then still ran some 140 young and 12 older collections per
million records, each traversing that whole live set: 15% of its CPU time.

:func:`tune_for_streaming`, called once the application has started (so the modules,
the topology and the clients exist):

1. collect once, then freeze every object alive: start-up objects are never scanned
   again;
2. raise the young-generation threshold above what the loop keeps alive, so young
   collections run when garbage really accumulates, not every round. Cycles are
   still collected, just less often (at most some 200,000 objects' worth waits).

Only the entry points that own the process call it (``App.run`` and ``headrace run``);
an App embedded with ``await app.start()`` leaves the host's collector alone.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 200_000


def tune_for_streaming() -> None:
    gc.collect()
    gc.freeze()
    _young, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)

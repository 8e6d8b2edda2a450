"""Garbage-collector settings for a process that runs applications as its main job.

A round of the loop builds tens of thousands of small tuples (fetched records, decoded
records, produced records) that all stay alive until the round ends. With CPython's
default young-generation threshold (700 allocations) a round triggers a hundred or
more young collections that free nothing and promote the whole batch to older
generations, which later collections traverse again; in the benchmarks that was a
quarter of the process's CPU time. Reference counting frees these tuples anyway: they
form no cycles.

:func:`tune_for_streaming`, called once the application has started (so the modules,
the topology and the clients exist):

1. collect once, then freeze every object alive: start-up objects are never scanned
   again;
2. raise the young-generation threshold, so collections run per few batches, not many
   times per batch. Cycles are still collected, just less often.

Only the entry points that own the process call it (``App.run`` and ``headrace run``);
an App embedded with ``await app.start()`` leaves the host's collector alone.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 20_000


def tune_for_streaming() -> None:
    gc.collect()
    gc.freeze()
    _young, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)

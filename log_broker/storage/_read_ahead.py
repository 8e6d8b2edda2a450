"""Read-ahead for consumers reading a segment from the start: ask the kernel early.

A fetch reads its bytes with one ``pread``. Bytes in the page cache (a log's tail,
just written) come back at memory speed; bytes that are not (the start of a big log
written long ago) are read from disk while the fetch waits, a megabyte or so at a time,
and between fetches the disk idles. On this project's machines a cold log read so ran
at half the rate of its cached tail (BENCHMARKS.md, "A 10 GB log"). After each read the
segment tells the kernel which bytes come next (``POSIX_FADV_WILLNEED``), so the disk
reads them while the fetch is answered and the next one is on its way: sequential
reads of a file not in the cache went from 180-290 to 570-740 MiB/s here.

Each range is advised once: a read advises ``WINDOW`` bytes past its end only when
less than half a window is still advised ahead of it, because asking about pages
already cached is not free either (it walks the page cache). A read at the end of the
data (a consumer at the log's tail) advises nothing. Platforms without
``posix_fadvise`` read as before.
"""

from __future__ import annotations

import os

WINDOW = 8 * 1024 * 1024


def advise_after_read(fd: int, end: int, size: int, advised_to: int) -> int:
    """After a read of ``fd`` up to byte ``end`` of ``size``, ask for what follows;
    return how far the file is now advised (pass it back in next time)."""
    if advised_to - WINDOW // 2 >= end >= advised_to - 2 * WINDOW:
        return advised_to  # enough is already on its way
    start = advised_to if advised_to - 2 * WINDOW <= end <= advised_to else end
    stop = min(end + WINDOW, size)
    if stop <= start:
        return advised_to
    advise = getattr(os, "posix_fadvise", None)
    if advise is not None:
        try:
            advise(fd, start, stop - start, os.POSIX_FADV_WILLNEED)
        except OSError:
            return advised_to  # only a hint; the read itself still works
    return stop

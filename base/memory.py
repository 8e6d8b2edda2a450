"""The memory a process holds, by who holds it: figures both the broker and an
application publish beside their metrics, so a resident size that grows can be told
apart as Python's objects, C heap in use, or heap kept free (fragmentation).

- :func:`python_blocks`: objects and buffers Python's allocator holds
  (``sys.getallocatedblocks``); a rising count is Python-level growth.
- :func:`c_heap`: the C heap's bytes in use and its size with free space kept (glibc's
  ``mallinfo2``; None on other C libraries). A size far above the bytes in use is
  fragmentation or free memory not given back, not a leak.

>>> heap = c_heap()
>>> heap is None or 0 < heap[0] <= heap[1]
True
>>> python_blocks() > 0
True
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from collections.abc import Callable


class _MallInfo2(ctypes.Structure):
    # glibc's struct mallinfo2 (2.33+): ten size_t fields.
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _find_mallinfo2() -> Callable[[], _MallInfo2] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        function = ctypes.CDLL(name).mallinfo2
    except (OSError, AttributeError):
        return None
    function.restype = _MallInfo2
    function.argtypes = []
    return function


_mallinfo2 = _find_mallinfo2()


def c_heap() -> tuple[int, int] | None:
    """(bytes in use, heap size) of the C heap: allocated in the main and other arenas
    plus directly mapped blocks; None without glibc's ``mallinfo2``."""
    if _mallinfo2 is None:
        return None
    info = _mallinfo2()
    return info.uordblks + info.hblkhd, info.arena + info.hblkhd


def python_blocks() -> int:
    """Memory blocks Python's allocator holds now."""
    return sys.getallocatedblocks()

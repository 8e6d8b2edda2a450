"""Reading with the cyclic garbage collector paused, between the chunks handed out.

A read builds a chunk from tens of thousands of short-lived tracked objects (one
librdkafka ``Message`` per record, ten thousand per consume, alive until their
columns are taken). They survive young collections only because they are still in
use, so the collector promotes them and soon runs full collections that traverse
every live object and every column list, several times per chunk: profiled on a
300,000-record read, those full collections took as long as the consume calls
themselves. None of these objects forms a cycle (reference counting frees them), so
the collector has nothing to find while a chunk is built; it runs again, as before,
whenever the caller has the chunk.
"""

from __future__ import annotations

import gc
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")


@contextmanager
def collector_paused() -> Iterator[None]:
    """Automatic collection off inside, back to what it was (a caller may have turned
    it off itself) on the way out."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def paused_between_yields(items: Iterator[T]) -> Generator[T, None, None]:
    """``items`` with the collector paused while it computes each one and running while
    the consumer holds it; closing this closes ``items``."""
    try:
        while True:
            with collector_paused():
                try:
                    item = next(items)
                except StopIteration:
                    return
            yield item
    finally:
        close = getattr(items, "close", None)
        if close is not None:
            close()

"""Fsyncs of many files at once: in C with the GIL released once for all of them
(``_csync.c``, built where a C compiler is), else one ``os.fsync`` after another.

``sync_files`` returns, per ``(fd, datasync)`` op in order, the ``OSError`` its call
raised (``None`` for success), when it started (``time.monotonic``) and how long it
took. The error is the one ``os.fsync``/``os.fdatasync`` raises: the same class,
errno and message, built from the errno the C function reports.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

Op = tuple[int, bool]  # a file descriptor; whether fdatasync (True) or fsync suffices


class Outcome(NamedTuple):
    error: OSError | None
    started: float  # time.monotonic
    seconds: float


_CompiledSync = Callable[..., list[tuple[int, float, float]]]


def load() -> _CompiledSync | None:
    """The compiled ``sync``, or None where the extension was not built."""
    try:
        from ._csync import sync
    except ImportError:
        return None
    return sync


_compiled = load()


def compiled() -> bool:
    """Whether one ``sync_files`` call gives the GIL up once for all its ops and can
    run them side by side (else they run one after another, each taking it back)."""
    return _compiled is not None


def sync_files(ops: Sequence[Op], threads: int = 1) -> list[Outcome]:
    """Sync each op's file once; ``threads`` native threads side by side where compiled
    (the fallback syncs one after another)."""
    compiled_sync = _compiled
    if compiled_sync is not None:
        return [
            Outcome(None if errno == 0 else os_error(errno), started, seconds)
            for errno, started, seconds in compiled_sync(ops, threads)
        ]
    return [_sync_one(fd, datasync) for fd, datasync in ops]


def os_error(errno: int) -> OSError:
    """The exception ``os.fsync`` raises for ``errno`` (OSError picks the subclass)."""
    return OSError(errno, os.strerror(errno))


def _sync_one(fd: int, datasync: bool) -> Outcome:
    started = time.monotonic()
    try:
        (os.fdatasync if datasync else os.fsync)(fd)
    except OSError as exc:
        return Outcome(exc, started, time.monotonic() - started)
    return Outcome(None, started, time.monotonic() - started)

"""Disk failures: one ERROR line per cause, and the error a client is answered with.

A full or failing disk fails every append until it is fixed, thousands a second; the
operator needs to hear of it once per cause (errno and directory), not once per
request, and clients need KAFKA_STORAGE_ERROR (retriable), not an unknown error.
"""

from __future__ import annotations

import errno
import logging
import threading
from pathlib import Path

from ._errors import KafkaStorageError

__all__ = ["storage_fault"]

log = logging.getLogger("headrace.broker.storage")

_reported: set[tuple[int, Path]] = set()
_lock = threading.Lock()


def storage_fault(exc: OSError, action: str, path: Path) -> KafkaStorageError:
    """Log ``exc`` at ERROR the first time its errno is seen for ``path``'s directory,
    and return the error to raise."""
    directory = path if path.is_dir() else path.parent
    code = exc.errno or 0
    with _lock:
        first = (code, directory) not in _reported
        _reported.add((code, directory))
    name = errno.errorcode.get(code, str(code))
    message = f"cannot {action} {path}: {name} {exc.strerror or exc}"
    if first:
        log.error("%s (logged once per cause; each request gets KAFKA_STORAGE_ERROR)", message)
    return KafkaStorageError(message)

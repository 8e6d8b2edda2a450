"""Small files that must never be seen half written.

Every layer keeps a few: the broker's checkpoints and cluster id, producer-id blocks,
transaction snapshots, a task's checkpoint, an instance's name. They all go through
:func:`write_atomically`, so each is durable in the same four steps.
"""

from __future__ import annotations

import os
from pathlib import Path

TEMPORARY_SUFFIX = ".tmp"
"""Appended to a file's name while its new content is written; recovery may delete
such leftovers, they are never read."""


def fsync_dir(directory: Path) -> None:
    """Make a file creation, rename or removal in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` so that after a crash it holds the old or the new
    content, never a mix, and a reader never sees a partial file.

    Steps:

    1. write ``data`` to ``<name>.tmp`` beside ``path`` (created with ``mode``);
    2. fsync that file, so its bytes are on disk before its name is;
    3. rename it over ``path`` (atomic on POSIX within one directory);
    4. fsync the directory, so the rename itself survives a crash.

    An ``OSError`` from any step propagates; ``path`` then still holds its old content,
    and a temporary file the failure left (a full disk) is removed.
    """
    temporary = path.with_name(path.name + TEMPORARY_SUFFIX)
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)

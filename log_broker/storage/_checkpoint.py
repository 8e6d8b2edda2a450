"""Small files that must never be seen half written: write, fsync, rename, fsync dir."""

from __future__ import annotations

import os
from pathlib import Path


def fsync_dir(directory: Path) -> None:
    """Make a file creation, rename or removal in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Replace ``path`` with ``data`` so that after a crash it holds the old or the new
    content, never a mix.

    Steps: write a temporary file beside it, fsync it, rename it over ``path``, fsync
    the directory so the rename itself survives.
    """
    temporary = path.with_name(path.name + ".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, path)
    fsync_dir(path.parent)


def read_offset(path: Path) -> int | None:
    """The offset stored by ``write_offset``, or None if the file is absent or unreadable."""
    try:
        text = path.read_text(encoding="ascii")
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    try:
        return int(text.strip())
    except ValueError:
        return None


def write_offset(path: Path, offset: int) -> None:
    write_atomically(path, f"{offset}\n".encode("ascii"))

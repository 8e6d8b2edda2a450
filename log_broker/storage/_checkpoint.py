"""Offset checkpoint files (recovery point, cleaner offsets), written atomically."""

from __future__ import annotations

from pathlib import Path

from headrace.base import write_atomically


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

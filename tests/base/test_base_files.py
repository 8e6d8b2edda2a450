"""write_atomically: the new content or the old one, never a mix, and every step synced."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from headrace.base import fsync_dir, write_atomically


def test_replaces_the_content_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "cluster.id"
    write_atomically(path, b"first")
    write_atomically(path, b"second, longer than the first")
    assert path.read_bytes() == b"second, longer than the first"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cluster.id"]


def test_applies_the_mode(tmp_path: Path) -> None:
    path = tmp_path / "credentials.json"
    write_atomically(path, b"{}", mode=0o600)
    assert path.stat().st_mode & 0o777 == 0o600


def test_syncs_the_file_before_the_rename_and_the_directory_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "producer_ids"
    steps: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        steps.append("fsync dir" if os.path.isdir(f"/proc/self/fd/{fd}") else "fsync file")
        real_fsync(fd)

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        steps.append("rename")
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    write_atomically(path, b"1000")
    assert steps == ["fsync file", "rename", "fsync dir"]


def test_a_failed_write_keeps_the_old_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "recovery-point-offset-checkpoint"
    write_atomically(path, b"42\n")

    def full_disk(fd: int, data: object) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_atomically(path, b"43\n")
    assert path.read_bytes() == b"42\n"


def test_fsync_dir_of_a_missing_directory_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        fsync_dir(tmp_path / "absent")

from __future__ import annotations

from pathlib import Path

import pytest

from headrace.state import CHECKPOINT_FILE, CheckpointError, TaskCheckpoint


def test_round_trip_and_replace(tmp_path: Path) -> None:
    checkpoint = TaskCheckpoint(tmp_path)
    assert checkpoint.read_checkpoint() == {}
    checkpoint.write_checkpoint({("app-counts-changelog", 0): 41, ("app-w-changelog", 3): 7})
    assert checkpoint.read_checkpoint() == {
        ("app-counts-changelog", 0): 41,
        ("app-w-changelog", 3): 7,
    }
    checkpoint.write_checkpoint({("app-counts-changelog", 0): 99})
    assert checkpoint.read_checkpoint() == {("app-counts-changelog", 0): 99}
    assert sorted(p.name for p in tmp_path.iterdir()) == [CHECKPOINT_FILE]


def test_delete_leaves_no_checkpoint(tmp_path: Path) -> None:
    checkpoint = TaskCheckpoint(tmp_path)
    checkpoint.write_checkpoint({("t", 0): 1})
    checkpoint.delete_checkpoint()
    checkpoint.delete_checkpoint()
    assert checkpoint.read_checkpoint() == {}


@pytest.mark.parametrize(
    "text", ["", "0\n", "1\n0\n", "0\n2\nt 0 1\n", "0\n1\nt zero 1\n", "0\n1\nt 0\n"]
)
def test_malformed_files_raise(tmp_path: Path, text: str) -> None:
    (tmp_path / CHECKPOINT_FILE).write_text(text)
    with pytest.raises(CheckpointError):
        TaskCheckpoint(tmp_path).read_checkpoint()


def test_a_torn_temporary_file_does_not_replace_the_checkpoint(tmp_path: Path) -> None:
    checkpoint = TaskCheckpoint(tmp_path)
    checkpoint.write_checkpoint({("t", 0): 5})
    (tmp_path / (CHECKPOINT_FILE + ".tmp")).write_text("0\n3\nt 0")  # a crash mid-write
    assert checkpoint.read_checkpoint() == {("t", 0): 5}

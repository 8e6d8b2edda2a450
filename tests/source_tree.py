"""The working tree as a build may see it, copied elsewhere, for the tests that build
headrace's wheel (tests/test_wheel.py, the Spark cluster's shipped package)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def copy_sources(dest: Path) -> None:
    """The files of the working tree a build may see: tracked and new, minus what git ignores.

    A wheel is built from such a copy, not the checkout, because setuptools writes
    ``build/`` and ``*.egg-info`` into the source tree, and ``build/lib`` keeps files since
    deleted from the source, which would then ship in the wheel.
    """
    listed = (
        subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for rel in filter(None, listed):
        source = ROOT / rel
        if source.is_file():  # a tracked file deleted in the working tree is not copied
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)

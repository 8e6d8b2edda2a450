"""Makes the coordinator harness importable from this directory's test modules,
whatever import mode pytest runs in."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from group_harness import Harness  # noqa: E402


@pytest.fixture
def h() -> Harness:
    return Harness()

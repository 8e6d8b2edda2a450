"""The broker's process maps its large buffers (request frames, fetched byte ranges)
and gives them back whole when freed, however large a buffer it freed before.

glibc raises its mmap threshold to the size of each mapped block freed; after that,
buffers below it come from the heap, where buffers of varying sizes and lifetimes leave
holes that later ones do not fit: in the memory soak the broker's heap grew from 11 to
20 MiB in ten minutes with its bytes in use flat at 9-10 MiB."""

from __future__ import annotations

import subprocess
import sys

# Run in a fresh process each: the threshold is the process's, for good.
PATTERN = """
import sys
from headrace.base.memory import _mallinfo2, fix_mmap_threshold
from headrace.log_broker._commands import LARGE_BUFFER_BYTES

applied = sys.argv[1] == "broker" and fix_mmap_threshold(LARGE_BUFFER_BYTES)
big = bytes(8 << 20)  # mapped; freeing it is what makes glibc raise its threshold
del big
mapped = _mallinfo2().hblkhd
buffer = bytes(300_000)  # a request frame or a fetched range
print(applied, _mallinfo2().hblkhd - mapped)
"""


def mapped_for_a_buffer(setting: str, env: dict[str, str] | None = None) -> tuple[str, int]:
    """Whether the broker's setting was applied, and the bytes mapped for a buffer."""
    run = subprocess.run(
        [sys.executable, "-c", PATTERN, setting],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    applied, mapped = run.stdout.split()
    return applied, int(mapped)


def test_large_buffers_stay_mapped_after_a_larger_one_was_freed() -> None:
    assert mapped_for_a_buffer("default") == ("False", 0)  # glibc's own: from the heap
    applied, mapped = mapped_for_a_buffer("broker")
    assert applied == "True" and mapped >= 300_000


def test_glibc_s_environment_variable_keeps_its_say() -> None:
    # MALLOC_MMAP_THRESHOLD_ is the user's choice (here: nothing below 64 MiB mapped).
    env = {"MALLOC_MMAP_THRESHOLD_": str(64 << 20)}
    assert mapped_for_a_buffer("broker", env) == ("False", 0)

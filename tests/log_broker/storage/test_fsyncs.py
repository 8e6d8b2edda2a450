"""The many-file fsync: the C extension against real files, and its fallback."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from headrace.log_broker.storage import _fsyncs


@pytest.fixture(params=["compiled", "python"])
def path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "python":
        monkeypatch.setattr(_fsyncs, "_compiled", None)
    return str(request.param)


@pytest.fixture
def files(tmp_path: Path) -> Iterator[list[int]]:
    fds = [os.open(tmp_path / f"f{i}", os.O_CREAT | os.O_WRONLY | os.O_APPEND) for i in range(12)]
    for fd in fds:
        os.write(fd, b"x" * 4096)
    yield fds
    for fd in fds:
        os.close(fd)


def _closed_fd() -> int:
    read, write = os.pipe()
    os.close(read)
    os.close(write)
    return write


def test_the_compiled_sync_is_the_one_in_use() -> None:
    assert _fsyncs.compiled()


@pytest.mark.usefixtures("path")
@pytest.mark.parametrize("threads", [1, 4, 32])
def test_real_files_sync_in_order(files: list[int], threads: int) -> None:
    ops = [(fd, i % 2 == 0) for i, fd in enumerate(files)]
    outcomes = _fsyncs.sync_files(ops, threads)
    assert len(outcomes) == len(ops)
    assert all(o.error is None and o.seconds >= 0 for o in outcomes)
    assert all(0 < o.started <= time.monotonic() for o in outcomes)
    assert _fsyncs.sync_files([], threads) == []


@pytest.mark.usefixtures("path")
@pytest.mark.parametrize("datasync", [True, False])
def test_a_bad_fd_fails_as_os_fsync_does(files: list[int], datasync: bool) -> None:
    bad = _closed_fd()
    with pytest.raises(OSError) as expected:
        (os.fdatasync if datasync else os.fsync)(bad)
    ops = [(files[0], datasync), (bad, datasync), (files[1], datasync)]
    for threads in (1, 3):
        outcomes = _fsyncs.sync_files(ops, threads)
        assert [o.error is None for o in outcomes] == [True, False, True]
        error = outcomes[1].error
        assert type(error) is type(expected.value)
        assert error is not None and error.errno == expected.value.errno
        assert str(error) == str(expected.value)  # "[Errno 9] Bad file descriptor"


@pytest.mark.usefixtures("path")
@pytest.mark.parametrize("fd", [-1, "3", 2**40])
def test_a_value_that_is_no_fd_raises_what_os_fsync_raises(fd: object) -> None:
    with pytest.raises(Exception) as expected:
        os.fsync(fd)  # type: ignore[arg-type]
    with pytest.raises(type(expected.value), match=re.escape(str(expected.value))):
        _fsyncs.sync_files([(fd, True)])  # type: ignore[list-item]


def test_without_the_extension_files_are_synced_in_python(tmp_path: Path) -> None:
    """An install without a C compiler has no extension; syncs still happen."""
    program = (
        "import os, sys\n"
        "sys.modules['headrace.log_broker.storage._csync'] = None  # as if never built\n"
        "from headrace.log_broker.storage import _fsyncs\n"
        "assert not _fsyncs.compiled()\n"
        f"fd = os.open({str(tmp_path / 'f')!r}, os.O_CREAT | os.O_WRONLY)\n"
        "print(_fsyncs.sync_files([(fd, True), (fd, False)], 4))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("error=None") == 2

"""The test command's own checks: lint, formatting, strict types and every module's examples.

Each check runs as a subprocess over the whole tree and fails with the tool's own report,
so ``scripts/dev test`` fails on a lint, format, type or doctest error like on any other
test. The last test breaks a copy of one small module in each of those four ways and
shows that every check notices.

mypy keeps its cache in ``.mypy_cache`` (content-hashed, so a stale one is never
trusted): a cold run over the tree takes about a minute on a busy machine, a warm one
seconds.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _run(*command: str | Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _report(result: subprocess.CompletedProcess[str]) -> str:
    return f"{' '.join(result.args)} exited {result.returncode}:\n{result.stdout}{result.stderr}"


# The project's configuration even for a file outside the tree (the broken copy).
_RUFF = ("--no-cache", "--config", ROOT / "pyproject.toml")


def ruff_check(*paths: str | Path) -> subprocess.CompletedProcess[str]:
    return _run(BIN / "ruff", "check", *_RUFF, *paths)


def ruff_format_check(*paths: str | Path) -> subprocess.CompletedProcess[str]:
    return _run(BIN / "ruff", "format", "--check", *_RUFF, *paths)


def mypy_tree() -> subprocess.CompletedProcess[str]:
    return _run(sys.executable, ROOT / "scripts" / "typecheck.py")


def mypy_files(*paths: str | Path) -> subprocess.CompletedProcess[str]:
    """Files on their own, under the project's configuration (strict)."""
    return _run(
        sys.executable,
        "-m",
        "mypy",
        "--config-file",
        ROOT / "pyproject.toml",
        "--no-incremental",
        *paths,
    )


def doctests(*files: str | Path) -> subprocess.CompletedProcess[str]:
    return _run(sys.executable, ROOT / "scripts" / "doctests.py", *files)


def test_ruff_finds_nothing_to_flag() -> None:
    result = ruff_check(ROOT)
    assert result.returncode == 0, _report(result)


def test_the_tree_is_formatted() -> None:
    result = ruff_format_check(ROOT)
    assert result.returncode == 0, _report(result)


@pytest.mark.slow  # about a minute and a half on two cores: the whole tree, strict
def test_strict_mypy_passes_over_every_package_the_tests_and_benchmarks() -> None:
    result = mypy_tree()
    assert result.returncode == 0, _report(result)


def test_every_modules_examples_run() -> None:
    result = doctests()
    assert result.returncode == 0, _report(result)
    assert " 0 failed" in result.stdout


def test_each_check_fails_on_a_broken_copy_of_a_module(tmp_path: Path) -> None:
    original = ROOT / "streams" / "runtime" / "_murmur2.py"
    module = tmp_path / "murmur2_copy.py"
    shutil.copy(original, module)
    for check in (ruff_check, ruff_format_check, mypy_files, doctests):
        result = check(module)
        assert result.returncode == 0, f"the unbroken copy must pass: {_report(result)}"

    text = original.read_text()
    broken = {
        "lint": "import os  # unused\n" + text,
        "format": text + "\nbadly   =  'formatted'\n",
        "types": text + '\n\ndef wrong() -> int:\n    return "not an int"\n',
        "doctest": text.replace('>>> murmur2(b"21")\n', '>>> murmur2(b"21") + 1\n'),
    }
    assert broken["doctest"] != text, "the copy's example moved; break another one"
    expected = {
        "lint": (ruff_check, "F401"),
        "format": (ruff_format_check, "would be reformatted"),
        "types": (mypy_files, "[return-value]"),
        "doctest": (doctests, "Failed example"),
    }
    for kind, source in broken.items():
        module.write_text(source)
        check, says = expected[kind]
        result = check(module)
        assert result.returncode != 0, f"{kind}: {_report(result)}"
        assert says in result.stdout + result.stderr, f"{kind}: {_report(result)}"

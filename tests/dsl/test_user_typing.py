"""What a user's editor and mypy learn from the DSL's types: ``typed_topology.py`` passes
strict mypy, and a copy that uses ``map_values``' result as the wrong type is refused, on
the line that does it.

mypy runs as a user's would: strict, from a directory outside the checkout, reading
``headrace`` in its installed shape (``.api-tree/``; ``tests/test_wheel.py`` does the
same against the installed wheel, through its ``py.typed``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOPOLOGY = Path(__file__).with_name("typed_topology.py")
DOWNSTREAM = "    doubled = lengths.map_values(lambda n: n * 2)  # DOWNSTREAM\n"


def mypy_user_file(path: Path, cache: Path) -> subprocess.CompletedProcess[str]:
    laid_out = subprocess.run(
        [sys.executable, ROOT / "scripts" / "installed_tree.py"], capture_output=True, text=True
    )
    assert laid_out.returncode == 0, laid_out.stderr
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--cache-dir",
            str(cache),
            # only the user's own file is reported, as for any installed package
            "--follow-imports=silent",
            str(path),
        ],
        cwd=path.parent,
        env={"MYPYPATH": str(ROOT / ".api-tree"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One mypy cache for the module's runs: the first reads the DSL, the rest reuse it."""
    return tmp_path_factory.mktemp("mypy-cache")


def _line_of(text: str, line: str) -> int:
    return text[: text.index(line)].count("\n") + 1


def test_the_typed_topology_passes_strict_mypy(tmp_path: Path, cache: Path) -> None:
    user = tmp_path / "topology.py"
    user.write_text(TOPOLOGY.read_text())
    result = mypy_user_file(user, cache)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_wrong_value_type_after_map_values_is_reported(tmp_path: Path, cache: Path) -> None:
    text = TOPOLOGY.read_text()
    assert DOWNSTREAM in text, "typed_topology.py's marked line changed; update DOWNSTREAM"
    line = _line_of(text, DOWNSTREAM)
    wrong = {
        # map_values(len) made the values ints: a string method on them is an error
        "method": DOWNSTREAM.replace("n * 2", "n.upper()"),
        # and a stream of them is not a stream of strings
        "annotation": DOWNSTREAM.replace("doubled =", "doubled: KStream[str, str] ="),
    }
    for kind, replacement in wrong.items():
        user = tmp_path / f"topology_{kind}.py"
        user.write_text(text.replace(DOWNSTREAM, replacement))
        result = mypy_user_file(user, cache)
        report = result.stdout + result.stderr
        assert result.returncode == 1, f"{kind}: {report}"
        assert f"{user.name}:{line}: error:" in report, f"{kind}: {report}"

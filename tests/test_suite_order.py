"""The suite hands out modules longest first, by their tests' ``slow`` marks (tests/suite_order.py).

pytest collects a small suite in a subprocess with the ordering plugin loaded, and the
order it collected in is the order the two workers would be handed the modules.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent

MODULES = {
    # three ordinary slow tests: 3 x 30 s
    "test_three_slow.py": (
        "import pytest\n"
        "pytestmark = pytest.mark.slow\n"
        "def test_a(): pass\n"
        "def test_b(): pass\n"
        "def test_c(): pass\n"
    ),
    # one test that says it takes two minutes
    "test_one_long.py": ("import pytest\n@pytest.mark.slow(seconds=120)\ndef test_long(): pass\n"),
    # many quick tests: 40 x 0.5 s
    "test_many_quick.py": "".join(f"def test_{i}(): pass\n" for i in range(40)),
    "test_one_slow.py": "import pytest\n@pytest.mark.slow\ndef test_slow(): pass\n",
}


def collected_order(tmp_path: Path) -> list[str]:
    for name, text in MODULES.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: long-running\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "suite_order"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(TESTS), "PATH": ""},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    modules: list[str] = []
    for line in done.stdout.splitlines():
        if "::" in line:
            module = line.split("::", 1)[0]
            if module not in modules:
                modules.append(module)
    return modules


def test_a_test_marked_with_its_seconds_puts_its_module_first(tmp_path: Path) -> None:
    assert collected_order(tmp_path) == [
        "test_one_long.py",  # 120 s
        "test_three_slow.py",  # 90 s
        "test_one_slow.py",  # 30 s
        "test_many_quick.py",  # 20 s
    ]

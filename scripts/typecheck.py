"""Strict mypy over the whole tree: every package, the tests, the benchmarks and the scripts.

The options live in pyproject.toml's ``[tool.mypy]``; this script decides what each run
sees, because one mypy run cannot see it all:

1. The packages, from ``.api-tree/`` (``scripts/installed_tree.py`` lays it out first):
   ``headrace.dsl`` is the repository's ``dsl/`` folder, a mapping mypy cannot follow.
2. ``tests/`` and ``benchmarks/``, from inside ``tests/``: a test folder such as
   ``tests/dsl/`` is module ``dsl`` there, and run from the repository's root mypy would
   take the package folder ``dsl/`` for it.
3. Each conftest of a folder that puts itself on ``sys.path`` for its helper modules:
   every one of them is module ``conftest``, so each gets a run of its own.

Paths in the report are the repository's own (``dsl/_kstream.py``, not the link in
``.api-tree/``). The exit status is 1 when any run found an error.

Usage: ``python scripts/typecheck.py [--cache-dir DIR]`` (default: ``.mypy_cache``).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

from installed_tree import lay_out

ROOT = Path(__file__).resolve().parents[1]

# "path/to/file.py:12: error: ..." and "path/to/file.py: note: ..."
_LOCATION = re.compile(r"^(?P<path>[^\s:][^:]*\.pyi?)(?=:)", re.MULTILINE)


def runs(root: Path) -> list[tuple[Path, list[str]]]:
    """Each mypy run as (working directory, files); no files means pyproject's ``files``."""
    conftests = sorted(p for p in (root / "tests").glob("*/**/conftest.py"))
    return [
        (root, []),
        (root / "tests", [str(root / "tests"), str(root / "benchmarks")]),
        # only the conftest's own errors: what it imports was checked in the run before
        *((path.parent, ["--follow-imports=silent", str(path)]) for path in conftests),
    ]


def source_path(path: str, cwd: Path, root: Path) -> str:
    """``path`` as mypy printed it (a link, or relative to ``cwd`` or to the configuration's
    folder, the repository) as the repository's."""
    candidates = [cwd / path, root / path]
    real = Path(os.path.realpath(next((p for p in candidates if p.exists()), candidates[0])))
    return str(real.relative_to(root)) if real.is_relative_to(root) else str(real)


def check(root: Path = ROOT, cache_dir: Path | None = None) -> tuple[bool, str]:
    """Run every mypy run; return (all clean, their reports joined)."""
    lay_out(root, root / ".api-tree")
    cache = cache_dir or root / ".mypy_cache"
    clean, reports = True, []
    for cwd, files in runs(root):
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "mypy",
                "--config-file",
                str(root / "pyproject.toml"),
                "--cache-dir",
                str(cache),
                *files,
            ],
            cwd=cwd,
            capture_output=True,
            text=True,
        )
        clean = clean and result.returncode == 0
        output = result.stdout + result.stderr
        reports.append(
            _LOCATION.sub(lambda m: source_path(m["path"], cwd, root), output)  # noqa: B023
        )
    return clean, "".join(reports)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", type=Path, default=None)
    args = parser.parse_args()
    clean, report = check(ROOT, args.cache_dir)
    sys.stdout.write(report)
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())

"""Run the examples in every module's docstrings, imported by the name a user imports it by.

``pytest --doctest-modules`` would import ``dsl/_kstream.py`` as ``dsl._kstream``, a second
copy beside ``headrace.dsl._kstream`` (the folders install under other names), so this
walks the installed package instead and runs :func:`doctest.testmod` on each module.

Usage: ``python scripts/doctests.py [FILE ...]``: no arguments means every module of
``headrace`` and ``pyspark_headrace``; a FILE is loaded on its own (it may not use
relative imports). Modules that hold no examples count for nothing. The exit status is 1 when an example failed or a module did not import.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil
import sys
import tomllib
import traceback
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
# Modules that do something when imported, rather than define something.
SKIP = frozenset({"headrace.__main__"})


def module_names(root: Path = ROOT) -> Iterator[str]:
    """Every module of every package pyproject.toml ships (an editable install maps the
    sub-packages by name, so walking ``headrace``'s folder would not find them)."""
    packages = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"][
        "packages"
    ]
    for name in packages:
        package = importlib.import_module(name)
        yield name
        for info in pkgutil.iter_modules(package.__path__, prefix=f"{name}."):
            if not info.ispkg and info.name not in SKIP:
                yield info.name


def load_file(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module  # dataclasses and the like look their module up here
    spec.loader.exec_module(module)
    return module


def run(loaders: Iterator[tuple[str, ModuleType | Exception]]) -> tuple[int, int]:
    """Run each module's examples; return (examples run, failures and import errors)."""
    attempted = failed = 0
    for name, loaded in loaders:
        if isinstance(loaded, Exception):
            failed += 1
            print(f"{name}: did not import:\n{''.join(traceback.format_exception(loaded))}")
            continue
        result = doctest.testmod(loaded, optionflags=doctest.ELLIPSIS)
        attempted += result.attempted
        failed += result.failed
    return attempted, failed


def _imported(names: Iterator[str]) -> Iterator[tuple[str, ModuleType | Exception]]:
    for name in names:
        try:
            yield name, importlib.import_module(name)
        except Exception as exc:  # reported as a failure, with its traceback
            yield name, exc


def _loaded(paths: list[Path]) -> Iterator[tuple[str, ModuleType | Exception]]:
    for path in paths:
        try:
            yield str(path), load_file(path)
        except Exception as exc:
            yield str(path), exc


def main(argv: list[str]) -> int:
    loaders = _loaded([Path(p) for p in argv]) if argv else _imported(module_names())
    attempted, failed = run(loaders)
    print(f"{attempted} examples run, {failed} failed")
    return 1 if failed or not attempted else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

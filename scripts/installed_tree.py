"""Lay out ``.api-tree/``: the package in its installed shape, made of links to the sources.

``headrace.dsl`` lives in the repository's ``dsl/`` folder, and so on (pyproject.toml's
``package-dir``). Tools that find modules by walking folders (mypy, mkdocstrings) cannot
follow that mapping, nor the import hook an editable install uses, so they read this tree
instead: ``.api-tree/headrace/dsl/_kstream.py`` links to ``dsl/_kstream.py``.

Run it as ``python scripts/installed_tree.py`` (mypy's configuration in pyproject.toml
reads the tree; the type-check test lays it out first) or call :func:`lay_out`.
"""

from __future__ import annotations

import contextlib
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
API_TREE = ROOT / ".api-tree"


def lay_out(root: Path = ROOT, tree: Path = API_TREE) -> Path:
    """Link every module and sub-package folder of ``root`` into ``tree``; return ``tree``.

    Links are added, never removed while valid, so two runs at once (a docs build and a
    type check, say) never see the tree half made; links to deleted files are dropped."""
    package_dirs = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-dir"
    ]
    for package, source in sorted(package_dirs.items()):
        target = tree.joinpath(*package.split("."))
        target.mkdir(parents=True, exist_ok=True)
        for path in (root / source).iterdir():
            # modules, their stubs, the typing marker, and sub-packages inside their parent's folder
            if (
                path.suffix in (".py", ".pyi")
                or path.name == "py.typed"
                or (path / "__init__.py").exists()
            ):
                with contextlib.suppress(FileExistsError):
                    (target / path.name).symlink_to(path)
    for link in tree.rglob("*"):
        if link.is_symlink() and not link.exists():
            link.unlink()
    return tree


if __name__ == "__main__":
    lay_out()

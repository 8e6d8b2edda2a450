"""What ``pip install -e .`` adds to setuptools' editable wheel, so type checkers see ``headrace``.

``headrace.dsl`` lives in the repository's ``dsl/`` folder, and so on (pyproject.toml's
``package-dir``). setuptools serves such a mapping in an editable install with an import
hook, and mypy, Pyright and the editors built on them run no import hooks: they read the
folders a ``.pth`` file names, and found no ``headrace`` at all. So the editable install
also lays out a tree of links in the package's installed shape, and names it in a ``.pth``
file of its own (setup.py runs :func:`add_link_tree` after setuptools built the wheel)::

    build/editable-tree/headrace/               a folder: a link to each entry of headrace/
    build/editable-tree/headrace/dsl -> dsl/    the whole folder, and so for each sub-package
    build/editable-tree/pyspark_headrace -> pyspark_headrace/

Python imports through the tree as well (a path entry is searched before the hook), so what
runs is what the type checkers read. The links point at the sources, so an edited module
needs no reinstall; the sub-packages are links to whole folders, so neither does a module
added to one of them. Only a module added to ``headrace/`` itself is served by setuptools'
hook, which stays installed behind the tree, until the next install, or
``python scripts/editable_tree.py`` (``scripts/dev`` runs it), links it.

(``scripts/installed_tree.py`` lays out ``.api-tree/`` for the repository's own type check
and documentation; this tree is the one an installed environment imports from.)
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import tomllib
import zipfile
from collections.abc import Mapping
from pathlib import Path

TREE = Path("build", "editable-tree")
# Named after setuptools' own ``__editable__.headrace-<version>.pth``, which installs the hook.
PTH = "__editable__.headrace.tree.pth"


def add_link_tree(project: Path, package_dirs: Mapping[str, str], dist_dir: Path) -> Path:
    """Lay out ``project``'s link tree and name it in the editable wheel built in ``dist_dir``
    (setuptools' ``editable_wheel`` leaves exactly one there); return the tree."""
    tree = lay_out(project.resolve(), package_dirs, project.resolve() / TREE)
    (wheel,) = dist_dir.glob("*.editable-*.whl")
    add_to_wheel(wheel, PTH, f"{tree}\n".encode())
    return tree


def lay_out(project: Path, package_dirs: Mapping[str, str], tree: Path) -> Path:
    """Link ``tree`` to ``project``'s sources in the installed shape; return ``tree``.

    ``package_dirs`` is setuptools' ``package-dir`` (``{"headrace.dsl": "dsl", ...}``): a
    package is a link to its folder, unless other packages are mapped into it (``headrace``),
    in which case it is a folder holding a link to each of its own entries beside theirs.
    Links are made beside their place and renamed onto it, and only links that name nothing
    any more are removed, so a process importing through the tree during an install never
    finds a module missing."""
    links = {
        tree.joinpath(*name.split(".")): project / folder for name, folder in package_dirs.items()
    }
    parents = sorted({place.parent for place in links if place.parent != tree})
    for parent in parents:
        source = links.pop(parent)
        for entry in source.iterdir():
            if entry.name != "__pycache__":
                links.setdefault(parent / entry.name, entry)
    for folder in (tree, *parents):
        if folder.is_symlink():  # laid out as a link by an older layout
            folder.unlink()
        folder.mkdir(parents=True, exist_ok=True)
    for place, source in links.items():
        _link(place, source)
    for folder in (tree, *parents):
        for entry in folder.iterdir():
            if entry.is_symlink() and entry not in links:
                entry.unlink()
    return tree


def _link(place: Path, source: Path) -> None:
    if place.is_symlink() and Path(os.readlink(place)) == source:
        return
    if place.is_dir() and not place.is_symlink():
        shutil.rmtree(place)
    fresh = place.with_name(f".{place.name}.{os.getpid()}")
    fresh.unlink(missing_ok=True)
    fresh.symlink_to(source, target_is_directory=source.is_dir())
    fresh.replace(place)


def add_to_wheel(wheel: Path, name: str, data: bytes) -> None:
    """Add the file ``name`` to a built wheel, listed in its RECORD with its hash and size
    as the wheel format asks (the zip is written again: an entry cannot be replaced)."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    rewritten = wheel.with_name(wheel.name + ".part")
    with (
        zipfile.ZipFile(wheel) as old,
        zipfile.ZipFile(rewritten, "w", zipfile.ZIP_DEFLATED) as new,
    ):
        new.writestr(name, data)
        for info in old.infolist():
            content = old.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                content += f"{name},sha256={digest},{len(data)}\n".encode()
            new.writestr(info, content)
    rewritten.replace(wheel)


if __name__ == "__main__":
    root = Path(__file__).resolve().parents[1]
    config = tomllib.loads((root / "pyproject.toml").read_text())
    lay_out(root, config["tool"]["setuptools"]["package-dir"], root / TREE)

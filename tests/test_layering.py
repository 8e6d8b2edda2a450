"""Which way imports point: the package map's arrows, checked on every module's source.

    headrace -> examples -> console, schema_registry, spark_bridge, dsl -> streams -> state
    headrace -> table_topics -> spark_bridge, schema_registry
    log_broker -> transactions
    everything may use base; base imports nothing of ours

The client commands (client_tools) sit beside the application side; the public surface
(``headrace/__init__.py`` and ``headrace.testing``) re-exports dsl and streams, so user
code (examples) imports it and the packages under it do not. Besides "no package imports
one above it", the two sides meet only at the top: the application side and the client
commands never import the broker's side, nor it theirs, so a real cluster can stand in for
the built-in broker. Every ``import`` counts, also those inside functions or under
``TYPE_CHECKING``: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# Higher imports lower; an import of a package with a higher number points up.
LAYER = {
    "headrace": 6,  # the `headrace` command, composed of every package's subcommands
    "pyspark_headrace": 6,  # the hook Spark looks up by name
    "examples": 5,
    "surface": 4,  # headrace/__init__.py and headrace.testing
    "table_topics": 4,  # the table writer: delta-rs through spark_bridge, the registry
    "console": 3,
    "schema_registry": 3,
    "spark_bridge": 3,
    "dsl": 3,
    "client_tools": 3,
    "streams": 2,
    "state": 1,
    "log_broker": 2,
    "transactions": 1,
    "base": 0,
}
APPLICATION = frozenset(
    {"console", "schema_registry", "spark_bridge", "table_topics", "dsl", "streams", "state"}
)
BROKER = frozenset({"log_broker", "transactions"})
SURFACE_MODULES = frozenset({"__init__", "testing"})

# Pairs (importer, imported) the layers alone would allow but the map forbids.
FORBIDDEN = {
    # both sides talk through the Kafka protocol only
    **{
        (a, b): "the application side never imports the broker" for a in APPLICATION for b in BROKER
    },
    **{
        (b, a): "the broker never imports the application side" for a in APPLICATION for b in BROKER
    },
    **{("client_tools", b): "the client commands are clients of any broker" for b in BROKER},
    **{(b, "client_tools"): "the broker never imports the client commands" for b in BROKER},
    # the registry is below the DSL, which encodes with its serdes
    ("schema_registry", "dsl"): "the registry is a client of Kafka, not of the DSL",
    ("schema_registry", "streams"): "the registry is a client of Kafka, not of the runtime",
}


@dataclass(frozen=True)
class Import:
    path: str  # relative to the repository
    line: int
    importer: str  # the package the importing module belongs to
    imported: str  # the package of ours it imports
    name: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line} {self.name}"


def package_folders(root: Path = ROOT) -> dict[str, Path]:
    """Each package of ours and its folder (pyproject.toml's package-dir)."""
    package_dir = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-dir"
    ]
    return {name.removeprefix("headrace."): root / folder for name, folder in package_dir.items()}


def imports_of_ours(root: Path = ROOT) -> Iterator[Import]:
    """Every import, in every module of every package, of another package of ours."""
    folders = package_folders(root)
    for package, folder in folders.items():
        for path in sorted(folder.rglob("*.py")):
            module = _dotted(package, path.relative_to(folder))
            importer = _importer(package, path.relative_to(folder))
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if not isinstance(node, ast.Import | ast.ImportFrom):
                    continue
                names = _imported_names(node, module, path.name == "__init__.py")
                # one finding per package a statement loads (`from m import a, b` is one)
                loaded = {_package_of(name, folders): name for name in reversed(names)}
                for imported, name in loaded.items():
                    if imported is not None and imported != importer:
                        yield Import(
                            str(path.relative_to(root)), node.lineno, importer, imported, name
                        )


def offences(found: Iterator[Import]) -> list[str]:
    """What breaks the map: an import up the layers, or one the map forbids outright."""
    wrong = []
    for imp in found:
        if imp.importer == "base":
            wrong.append(f"{imp}: base imports no other package of ours")
        elif (imp.importer, imp.imported) in FORBIDDEN:
            wrong.append(f"{imp}: {FORBIDDEN[imp.importer, imp.imported]}")
        elif LAYER[imp.imported] > LAYER[imp.importer]:
            wrong.append(f"{imp}: {imp.importer} is below {imp.imported}")
    return wrong


def _dotted(package: str, relative: Path) -> list[str]:
    """The dotted name of a package's module as installed, as a list of parts."""
    top = ["headrace"] if package == "headrace" else package.split(".")
    if package not in ("headrace", "pyspark_headrace"):
        top = ["headrace", *top]
    parts = list(relative.with_suffix("").parts)
    return top + (parts[:-1] if parts[-1] == "__init__" else parts)


def _importer(package: str, relative: Path) -> str:
    if package == "headrace" and relative.with_suffix("").parts[0] in SURFACE_MODULES:
        return "surface"
    return package


def _imported_names(
    node: ast.Import | ast.ImportFrom, module: list[str], is_package: bool
) -> list[str]:
    """Absolute names an import statement loads: the module, and each name taken from it."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        # a package's own `.` is itself; a module's `.` is the package holding it
        anchor = module if is_package else module[:-1]
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, *([node.module] if node.module else [])])
    else:
        base = node.module or ""
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def _package_of(name: str, folders: dict[str, Path]) -> str | None:
    parts = name.split(".")
    if parts[0] == "pyspark_headrace":
        return "pyspark_headrace"
    if parts[0] != "headrace":
        return None
    if len(parts) > 1 and parts[1] in folders:
        return parts[1]
    if len(parts) == 1 or parts[1] in SURFACE_MODULES:
        return "surface"
    # `from headrace import cli` loads a module of the command; `from headrace import App`
    # a name of the surface
    return "headrace" if (folders["headrace"] / f"{parts[1]}.py").exists() else "surface"


def test_every_package_has_a_place_on_the_map() -> None:
    assert set(package_folders()) <= set(LAYER), "add the new package to LAYER"


def test_every_import_points_down_the_map() -> None:
    assert offences(imports_of_ours()) == []


def test_the_scan_sees_imports_of_every_kind() -> None:
    """Relative, absolute, lazy and TYPE_CHECKING imports are all found, resolved to
    the package they load (a scan that missed them would pass on anything)."""
    found = {(i.path, i.importer, i.imported) for i in imports_of_ours()}
    # absolute, at the top of a module
    assert ("transactions/_coordinator.py", "transactions", "base") in found
    # inside a function
    assert ("headrace/_value_formats.py", "headrace", "client_tools") in found
    # under TYPE_CHECKING, in the public surface
    assert ("headrace/__init__.py", "surface", "dsl") in found
    # the public surface, as user code imports it
    assert any((i, j) == ("examples", "surface") for _, i, j in found)


@pytest.mark.parametrize(
    ("where", "source", "rule"),
    [
        ("client_tools/_planted.py", "from headrace.log_broker import Broker\n", "any broker"),
        (
            "transactions/_planted.py",
            "from ..log_broker.records import _batches\n",
            "below log_broker",
        ),
        ("base/_planted.py", "import headrace.state\n", "base imports no other"),
        ("dsl/_planted.py", "def f():\n    from headrace.log_broker import Broker\n", "never"),
        ("state/_planted.py", "from headrace.streams import App\n", "state is below streams"),
        ("streams/_planted.py", "from headrace import StreamsBuilder\n", "below surface"),
        ("log_broker/_planted.py", "from headrace.client_tools import groups\n", "never"),
        ("schema_registry/_planted.py", "from headrace.dsl import Serdes\n", "not of the DSL"),
    ],
)
def test_a_planted_import_against_the_map_is_caught(
    tmp_path: Path, where: str, source: str, rule: str
) -> None:
    # A tree of the same packages holding just that one module (the real tree's own
    # imports are checked above).
    (tmp_path / "pyproject.toml").symlink_to(ROOT / "pyproject.toml")
    (tmp_path / where).parent.mkdir(parents=True)
    (tmp_path / where).write_text(source)
    [offence] = offences(imports_of_ours(tmp_path))
    assert offence.startswith(where) and rule in offence, offence

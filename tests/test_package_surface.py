"""One package under its own name: the public surface, and no import of the old top-level names."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The repository's folders that install as sub-packages of ``headrace``.
SUBPACKAGES = (
    "client_tools",
    "dsl",
    "examples",
    "log_broker",
    "spark_bridge",
    "state",
    "streams",
    "transactions",
)


def test_headrace_public_surface_is_pinned() -> None:
    import headrace

    assert sorted(headrace.__all__) == [
        "AgentApp",
        "AgentStream",
        "AgentTopic",
        "App",
        "AsyncOptions",
        "AsyncProcessor",
        "FixedKeyProcessor",
        "JoinWindows",
        "Serdes",
        "SessionWindows",
        "SlidingWindows",
        "StreamsBuilder",
        "Table",
        "TimeWindows",
        "Topology",
        "ValueTransformerWithKey",
        "__version__",
        "materialized",
    ]
    for name in headrace.__all__:
        assert getattr(headrace, name) is not None, name


def test_public_names_are_the_sub_packages_own() -> None:
    import headrace
    import headrace.testing
    from headrace import dsl, streams
    from headrace.streams import runtime, testing

    assert headrace.App is streams.App is runtime.App
    assert headrace.StreamsBuilder is dsl.StreamsBuilder
    assert headrace.Topology is streams.Topology
    assert headrace.AsyncProcessor is streams.AsyncProcessor
    assert headrace.AsyncOptions is streams.AsyncOptions
    for name in (
        "Serdes",
        "TimeWindows",
        "SlidingWindows",
        "SessionWindows",
        "JoinWindows",
        "materialized",
        "AgentApp",
        "AgentStream",
        "AgentTopic",
        "Table",
        "FixedKeyProcessor",
        "ValueTransformerWithKey",
    ):
        assert getattr(headrace, name) is getattr(dsl, name), name
    assert headrace.testing.TopologyTestDriver is testing.TopologyTestDriver
    assert sorted(headrace.testing.__all__) == [
        "ChangelogEntry",
        "TestInputTopic",
        "TestOutputTopic",
        "TestRecord",
        "TopologyTestDriver",
    ]


def test_unknown_name_raises_attribute_error() -> None:
    import headrace

    with pytest.raises(AttributeError, match="NoSuchThing"):
        headrace.NoSuchThing  # noqa: B018


def test_importing_headrace_or_the_broker_leaves_the_application_side_unloaded() -> None:
    code = (
        "import sys, headrace, headrace.log_broker; "
        "print(sorted(m for m in ('aiokafka', 'headrace.dsl', 'headrace.streams') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _python_files() -> list[Path]:
    folders = ("headrace", *SUBPACKAGES, "pyspark_headrace", "tests", "benchmarks", "scripts")
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


def test_no_code_imports_a_sub_package_by_its_old_top_level_name() -> None:
    # Run from a checkout, ``import streams`` would still resolve (the checkout is on
    # sys.path), and then break once installed: forbid it everywhere.
    offenders = []
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            offenders += [
                f"{path.relative_to(ROOT)}:{node.lineno} {name}"
                for name in names
                if name.split(".")[0] in SUBPACKAGES
            ]
    assert offenders == []

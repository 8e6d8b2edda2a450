"""The documentation site: it builds strictly, and every example in it runs.

A page's ``sh`` blocks run in one bash process, the way a reader types them into one
terminal, in a temporary directory with the project's ``.venv/bin`` on ``PATH``; then
its ``python`` blocks run in order in one namespace (so a page can build on its own
earlier blocks, and read what its shell blocks wrote). Pages write the default ports
(9092 for the broker, 8080 for a service's HTTP server, 8081 for a second one); the test
moves them to free ports. A page whose shell blocks start a broker uses that one; the
others talk to one the test starts for the page.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from brokerproc import BrokerProcess, free_port
from doc_blocks import (
    RUN_TAGS,
    blocks,
    blocks_in_place,
    clean_env,
    move_ports,
    run_bash,
    shell_env,
    tags,
)

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
SHOWN_TAGS = {"text", "toml", "json", "properties", "yaml"}


def _id(page: Path) -> str:
    return str(page.relative_to(DOCS))


def test_every_block_is_tagged_run_or_shown() -> None:
    assert PAGES
    for page in PAGES:
        unknown = set(tags(page)) - RUN_TAGS - SHOWN_TAGS
        assert not unknown, (
            f"{_id(page)}: tag each block as one of {sorted(RUN_TAGS | SHOWN_TAGS)}, not {unknown}"
        )


@pytest.fixture
def ports(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[int, int]]:
    """The default ports moved: 9092 to a broker of the page's own (pages create topics
    of the same names), 8080 and 8081 to free ports."""
    with BrokerProcess(tmp_path_factory.mktemp("broker") / "data") as broker:
        yield {9092: broker.port, 8080: free_port(), 8081: free_port()}


def _runnable(page: Path) -> Any:
    """A page with examples to run; one that starts Spark takes most of a minute, which
    the suite's order should know (tests/suite_order.py)."""
    spark = any("pyspark" in block for block in blocks(page, "python"))
    return pytest.param(page, marks=[pytest.mark.slow(seconds=45)] if spark else [], id=_id(page))


@pytest.mark.parametrize(
    "page", [_runnable(page) for page in PAGES if blocks(page, "python") or blocks(page, "sh")]
)
def test_examples_run(
    page: Path, ports: dict[int, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page's shell blocks, then its Python blocks (which may read what the shell wrote)."""
    script = "\n".join(blocks(page, "sh"))
    if script:
        _run_shell(script, dict(ports), tmp_path)
    monkeypatch.chdir(tmp_path)  # examples may write files
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")  # a Spark session binds loopback only
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for block in blocks_in_place(page, "python"):
        exec(compile(move_ports(block, ports), str(page), "exec"), namespace)


def _run_shell(script: str, ports: dict[int, int], cwd: Path) -> None:
    if "headrace broker" in script:
        ports[9092] = free_port()  # the page starts a broker of its own
    result = run_bash(
        move_ports(script, ports), cwd, shell_env(f"127.0.0.1:{ports[9092]}"), timeout=240
    )
    logs = "\n".join(
        f"--- {log.name}\n{log.read_text()[-3000:]}" for log in sorted(cwd.glob("*.log"))
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}\n{logs}"


def test_site_builds_strictly(tmp_path: Path) -> None:
    """`scripts/dev docs`, as the README gives it: broken links, missing pages and
    docstring errors fail the build."""
    result = subprocess.run(
        ["scripts/dev", "docs", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=clean_env(),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").exists()

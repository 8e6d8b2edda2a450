"""The README runs as written: its Python blocks, and its shell blocks in order.

Every fenced block of the README is tagged: ``python`` blocks are executed in one
namespace, ``sh`` blocks are run by bash, ``text`` blocks are shown and not run. An
untagged block fails the first test, so no command can sit in the README unrun.

The shell blocks are two runs:

- the quickstart (the first ``sh`` block) runs from the checkout, where ``scripts/dev``
  lives;
- every later ``sh`` block runs in one bash process, the way a reader types them into one
  terminal: the broker started in the first of them (its pid in ``$broker``) is used by
  the others and stopped by the last. It runs in a temporary directory with the
  project's ``.venv/bin`` on ``PATH``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from brokerproc import free_port
from doc_blocks import blocks, clean_env, move_ports, run_bash, shell_env, tags

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
TAGS = {"python", "sh", "text"}


def _blocks(tag: str) -> list[str]:
    return blocks(README, tag)


def test_every_block_is_tagged_run_or_shown() -> None:
    found = tags(README)
    assert found, "no fenced blocks found"
    assert set(found) <= TAGS, f"tag each README block as one of {sorted(TAGS)}: {found}"


def test_python_blocks_run_in_order(capsys: pytest.CaptureFixture[str]) -> None:
    blocks = _blocks("python")
    assert len(blocks) >= 2
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
    out = capsys.readouterr().out
    assert "Sub-topology: 0" in out  # describe() of the first block
    assert "page-views-per-minute" in out
    assert "{'page': '/home', 'views': 2}" in out  # the driver block's closed minute


@pytest.mark.slow
def test_quickstart_runs_from_the_checkout() -> None:
    quickstart = _blocks("sh")[0]
    # `scripts/dev test` runs the whole suite, this test among them: run for real, it would
    # start itself again. Its set-up and pytest's start still run here; collecting this
    # module stands in for the suite.
    line = "scripts/dev test "
    assert quickstart.count(line) == 1, quickstart
    script = quickstart.replace(line, "scripts/dev test --collect-only -q tests/test_readme.py ")
    result = run_bash(script, ROOT, clean_env(), timeout=240)
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    # scripts/dev demo: the whole pipeline, the Spark report included, checked by itself.
    assert "[done]     all results match" in out, out
    assert "[spark]    totals match the generated views" in out, out
    assert "tests/test_readme.py::test_the_tour_runs_as_written" in out, out


@pytest.mark.slow
def test_the_tour_runs_as_written(tmp_path: Path) -> None:
    tour = "\n".join(_blocks("sh")[1:])
    # The README uses the default ports, 9092 for the broker and 8080 for a service's HTTP
    # server. Other tests and runs share this machine, so the test moves both to free
    # ports: the two numbers are rewritten wherever the README writes them, and
    # HEADRACE_BOOTSTRAP_SERVERS (which every headrace command reads in place of its
    # default) names the moved broker for the commands that rely on the default.
    broker_port, http_port = free_port(), free_port()
    for default in (9092, 8080):
        assert re.search(rf"\b{default}\b", tour), f"the tour no longer uses port {default}"
    script = move_ports(tour, {9092: broker_port, 8080: http_port})
    result = run_bash(script, tmp_path, shell_env(f"127.0.0.1:{broker_port}"), timeout=240)
    (tmp_path / "tour.out").write_text(result.stdout)
    logs = "\n".join(
        f"--- {log.name}\n{log.read_text()[-3000:]}" for log in sorted(tmp_path.glob("*.log"))
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}\n{logs}"
    out = result.stdout.splitlines()

    # The App from app.py: people's page views, keyed by page; the crawler's is gone.
    assert sorted(line for line in out if line.startswith(("/home\t", "/docs\t"))) == [
        '/docs\t{"page":"/docs","user":"bob"}',
        '/home\t{"page":"/home","user":"alice"}',
        '/home\t{"page":"/home","user":"carol"}',
    ]
    # /health answered while the service ran (its state and tasks, as JSON).
    assert any(line.startswith('{"application_id": "page-views-by-page"') for line in out), out
    # The example, run by module name, serves its windowed store.
    assert any(
        line.startswith('{"stores": ') and '"store": "page-views-per-minute"' in line
        for line in out
    ), out
    # The broker's commands.
    assert "created topic orders with 3 partition(s)" in out
    assert "k1\thello" in out
    # Spark SQL over what the export handed to Delta Lake.
    rows = [line.split() for line in out if re.fullmatch(r"/\w+\s+\d+", line)]
    assert rows == [["/docs", "1"], ["/home", "2"]], out
    # Every service stopped cleanly on SIGTERM, and so did the broker (`set -e` and
    # `wait $pid` fail the script otherwise); their logs say so too.
    assert "stopped cleanly" in (tmp_path / "app.log").read_text()
    assert "stopped cleanly" in (tmp_path / "page-views.log").read_text()

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

import contextlib
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest
from brokerproc import free_port

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FENCE = re.compile(r"^```(\S*)\n(.*?)^```", flags=re.S | re.M)
TAGS = {"python", "sh", "text"}


def _blocks(tag: str) -> list[str]:
    return [body for block_tag, body in FENCE.findall(README.read_text()) if block_tag == tag]


def _env() -> dict[str, str]:
    """The caller's environment without settings that would redirect the README's commands."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("HEADRACE_")}


def _run_bash(script: str, cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    """``script`` under ``bash -euo pipefail``; whatever it leaves running is stopped after.

    bash runs in a process group of its own, and the commands it starts with ``&`` stay in
    that group, so a script that fails (or times out) before its ``kill`` lines does not
    leave a broker or a service behind: the group is sent SIGTERM by its id.
    """
    proc = subprocess.Popen(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
        err += f"\n(timed out after {timeout} s)"
    finally:
        # ProcessLookupError: the group is gone, everything it started has stopped.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_every_block_is_tagged_run_or_shown() -> None:
    tags = [tag for tag, _body in FENCE.findall(README.read_text())]
    assert tags, "no fenced blocks found"
    assert set(tags) <= TAGS, f"tag each README block as one of {sorted(TAGS)}: {tags}"


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
    result = _run_bash(script, ROOT, _env(), timeout=240)
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
    script = tour
    for default, port in ((9092, broker_port), (8080, http_port)):
        assert re.search(rf"\b{default}\b", script), f"the tour no longer uses port {default}"
        script = re.sub(rf"\b{default}\b", str(port), script)
    env = {**_env(), "HEADRACE_BOOTSTRAP_SERVERS": f"127.0.0.1:{broker_port}",
           "PATH": f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    result = _run_bash(script, tmp_path, env, timeout=240)
    (tmp_path / "tour.out").write_text(result.stdout)
    logs = "\n".join(f"--- {log.name}\n{log.read_text()[-3000:]}" for log in sorted(tmp_path.glob("*.log")))
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
    assert any(line.startswith('{"stores": ') and '"store": "page-views-per-minute"' in line
               for line in out), out
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

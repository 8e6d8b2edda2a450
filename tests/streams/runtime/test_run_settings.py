"""`headrace run`: a flag, then a HEADRACE_* variable, then the App's own arguments, then a
settings file, then the defaults; a flag or variable overrides only when given."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from rtprocs import ROOT, Cluster, create_topics, read_until

from headrace.cli import build_parser
from headrace.streams._commands import build_app

APP = """\
from headrace import App, Serdes, StreamsBuilder

def topology():
    builder = StreamsBuilder()
    builder.stream({source!r}).map_values(lambda v: v.upper()).to({sink!r}, value_serde=Serdes.bytes())
    return builder

app = App("own-id", topology, bootstrap_servers={bootstrap!r}, commit_interval_ms=300,
          state_dir={state!r}, log_level="warning")
"""


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in list(os.environ):
        if name.startswith("HEADRACE_"):
            monkeypatch.delenv(name)
    return monkeypatch


def _app_file(
    tmp_path: Path, bootstrap: str = "127.0.0.1:1111", source: str = "in", sink: str = "out"
) -> Path:
    path = tmp_path / "own_app.py"
    path.write_text(
        APP.format(source=source, sink=sink, bootstrap=bootstrap, state=str(tmp_path / "state"))
    )
    return path


def _settings(*argv: str) -> Any:
    return build_app(build_parser().parse_args(["run", *argv])).settings


def test_an_app_runs_with_its_own_settings_when_nothing_overrides(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    s = _settings(f"{_app_file(tmp_path)}:app")
    assert (s.application_id, s.bootstrap_servers, s.commit_interval, s.log_level) == (
        "own-id",
        "127.0.0.1:1111",
        300,
        "WARNING",
    )


def test_a_variable_overrides_the_app_and_a_flag_overrides_both(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    target = f"{_app_file(tmp_path)}:app"
    clean_env.setenv("HEADRACE_BOOTSTRAP_SERVERS", "127.0.0.1:2222")
    clean_env.setenv("HEADRACE_COMMIT_INTERVAL_MS", "400")
    clean_env.setenv("HEADRACE_LOG_LEVEL", "error")
    s = _settings(target)
    assert (s.bootstrap_servers, s.commit_interval, s.log_level) == ("127.0.0.1:2222", 400, "ERROR")
    s = _settings(
        target,
        "--bootstrap-servers",
        "127.0.0.1:3333",
        "--commit-interval-ms",
        "500",
        "--log-level",
        "Info",
    )
    assert (s.bootstrap_servers, s.commit_interval, s.log_level) == ("127.0.0.1:3333", 500, "INFO")
    # A flag that is not given takes no part: the variable still wins for it.
    s = _settings(target, "--commit-interval-ms", "600")
    assert (s.bootstrap_servers, s.commit_interval) == ("127.0.0.1:2222", 600)


def test_a_settings_file_fills_in_below_the_app_own_arguments(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "run.toml"
    file.write_text("commit_interval_ms = 900\nnum_standby_replicas = 2\nlinger_ms = 7\n")
    clean_env.setenv("HEADRACE_LINGER_MS", "8")
    s = _settings(f"{_app_file(tmp_path)}:app", "--settings", str(file))
    # The App's 300 wins over the file; the file gives what the App does not; the
    # variable wins over the file.
    assert (s.commit_interval, s.num_standby_replicas, s.linger_ms) == (300, 2, 8)
    assert s.bootstrap_servers == "127.0.0.1:1111"


def test_an_application_id_flag_renames_an_app(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    s = _settings(f"{_app_file(tmp_path)}:app", "--application-id", "renamed")
    assert (s.application_id, s.bootstrap_servers) == ("renamed", "127.0.0.1:1111")


def test_a_topology_target_uses_the_default_or_the_variable(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    target = f"{_app_file(tmp_path)}:topology"
    assert _settings(target, "--application-id", "t").bootstrap_servers == "127.0.0.1:9092"
    clean_env.setenv("HEADRACE_BOOTSTRAP_SERVERS", "127.0.0.1:2222")
    assert _settings(target, "--application-id", "t").bootstrap_servers == "127.0.0.1:2222"
    assert (
        _settings(
            target, "--application-id", "t", "--bootstrap-servers", "127.0.0.1:3333"
        ).bootstrap_servers
        == "127.0.0.1:3333"
    )


def test_a_topology_target_without_an_application_id_is_refused(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    from headrace.streams._errors import ConfigError

    with pytest.raises(ConfigError, match="--application-id"):
        _settings(f"{_app_file(tmp_path)}:topology")


def test_the_help_states_the_precedence() -> None:
    text = subprocess.run(
        [sys.executable, "-m", "headrace", "run", "--help"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    assert "a flag given here; a HEADRACE_* environment" in text
    assert "the App's\nown constructor arguments; a settings file" in text


def _run_without_flags(target: str, log_path: Path, **env: str) -> subprocess.Popen[bytes]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HEADRACE_")}
    with open(log_path, "wb") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "headrace", "run", target, "--status-interval", "0.5"],
            stdout=log,
            stderr=log,
            cwd=ROOT,
            env={**clean, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(ROOT), **env},
        )


async def test_headrace_run_uses_the_app_own_bootstrap_servers(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The broker listens on a free port, not 9092; only the App names it."""
    bootstrap = cluster.bootstrap
    assert not bootstrap.endswith(":9092")
    await create_topics(bootstrap, "own-in", "own-out")
    app_file = _app_file(tmp_path, bootstrap, "own-in", "own-out")
    log_path = tmp_path / "run.log"
    # No --bootstrap-servers flag and no HEADRACE_BOOTSTRAP_SERVERS.
    proc = _run_without_flags(f"{app_file}:app", log_path, HEADRACE_LOG_LEVEL="Debug")
    try:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await producer.start()
        try:
            for i in range(5):
                await producer.send("own-in", b"word%d" % i, key=b"k%d" % i)
            await producer.flush()
        finally:
            await producer.stop()
        got = [v for _k, v in await read_until(bootstrap, "own-out", lambda got: len(got) >= 5, 30)]
        assert sorted(got) == [b"WORD%d" % i for i in range(5)], log_path.read_text()[-3000:]
    finally:
        proc.terminate()
        code = await asyncio.to_thread(proc.wait, 30)
    text = log_path.read_text()
    assert code == 0, text[-3000:]
    assert f"[run] own-id running against {bootstrap}" in text
    # HEADRACE_LOG_LEVEL=Debug (any case) won over the App's own "warning".
    assert " DEBUG headrace.streams.run: settings: " in text

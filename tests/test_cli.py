"""The `headrace` command itself: --version, and log levels read in any case."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import headrace
from headrace.cli import build_parser
from headrace.streams._commands import build_app

ROOT = Path(__file__).resolve().parents[1]

TOPOLOGY = """\
from headrace import StreamsBuilder

def topology():
    builder = StreamsBuilder()
    builder.stream("in").to("out")
    return builder
"""


def _headrace(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("HEADRACE_")}
    return subprocess.run(
        [sys.executable, "-m", "headrace", *argv],
        capture_output=True,
        text=True,
        env={**base, **(env or {})},
        cwd=ROOT,
        timeout=60,
    )


def test_version_prints_the_package_version() -> None:
    done = _headrace("--version")
    assert done.returncode == 0
    assert done.stdout == f"headrace {headrace.__version__}\n"
    assert headrace.__version__ != "0+unknown"  # the installed package's own version


@pytest.mark.parametrize("given", ["debug", "DEBUG", "Debug", " debug "])
def test_the_log_level_variable_is_read_in_any_case(
    given: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "topo.py").write_text(TOPOLOGY)
    monkeypatch.setenv("HEADRACE_LOG_LEVEL", given)
    args = build_parser().parse_args(
        ["run", f"{tmp_path / 'topo.py'}:topology", "--application-id", "a"]
    )
    assert build_app(args).settings.log_level == "DEBUG"


@pytest.mark.parametrize("given", ["warning", "WARNING", "Warning"])
def test_the_log_level_flag_is_read_in_any_case(
    given: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "topo.py").write_text(TOPOLOGY)
    monkeypatch.setenv("HEADRACE_LOG_LEVEL", "debug")
    args = build_parser().parse_args(
        [
            "run",
            f"{tmp_path / 'topo.py'}:topology",
            "--application-id",
            "a",
            "--log-level",
            given,
            "--log-format",
            "JSON",
        ]
    )
    settings = build_app(args).settings
    assert (settings.log_level, settings.log_format) == ("WARNING", "json")


def test_a_bad_log_level_is_one_line_listing_the_choices(tmp_path: Path) -> None:
    (tmp_path / "topo.py").write_text(TOPOLOGY)
    target = f"{tmp_path / 'topo.py'}:topology"
    done = _headrace("run", target, "--application-id", "a", env={"HEADRACE_LOG_LEVEL": "loud"})
    assert done.returncode == 1
    assert done.stderr == (
        "headrace run: error: invalid settings: log_level (from HEADRACE_LOG_LEVEL): "
        "Input should be 'DEBUG', 'INFO', 'WARNING' or 'ERROR'\n"
    )
    done = _headrace("run", target, "--application-id", "a", "--log-level", "chatty")
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert "log_level: Input should be 'DEBUG', 'INFO', 'WARNING' or 'ERROR'" in done.stderr


def test_run_loads_an_app_file_that_imports_a_module_beside_it(tmp_path: Path) -> None:
    # `python app.py` puts app.py's folder on the path; `headrace run app.py:app` must too.
    from headrace.streams._commands import load_target

    app_dir = tmp_path / "myapp"
    app_dir.mkdir()
    (app_dir / "my_topics.py").write_text("SOURCE = 'orders-in'\n")
    (app_dir / "app.py").write_text(
        "from my_topics import SOURCE\n"
        "from headrace import StreamsBuilder\n"
        "def topology():\n"
        "    builder = StreamsBuilder()\n"
        "    builder.stream(SOURCE).to('orders-out')\n"
        "    return builder.build()\n"
    )
    topology = load_target(f"{app_dir / 'app.py'}:topology")()
    assert "orders-in" in str(topology.describe())


def _complete(script: str, *words: str) -> list[str]:
    """What bash completes for ``words`` (the last one being typed)."""
    quoted = " ".join(f"'{w}'" for w in words)
    program = (
        f"{script}\nCOMP_WORDS=({quoted}); COMP_CWORD={len(words) - 1}; _headrace; "
        'printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return sorted(line for line in done.stdout.splitlines() if line)


def test_bash_completion_follows_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    from clirun import headrace as run

    script = run(capsys, "completion", "bash").out
    assert "complete -F _headrace headrace" in script
    assert _complete(script, "headrace", "gr") == ["groups"]
    assert _complete(script, "headrace", "topics", "") == [
        "--help",
        "-h",
        "alter",
        "create",
        "delete",
        "describe",
        "list",
    ]
    assert "--replication-factor" in _complete(script, "headrace", "topics", "create", "t", "--re")
    assert _complete(script, "headrace", "consume", "t", "--isolation-level", "read_") == [
        "read_committed",
        "read_uncommitted",
    ]
    assert _complete(script, "headrace", "groups", "reset-offsets", "g", "--to-") == [
        "--to-datetime",
        "--to-earliest",
        "--to-latest",
        "--to-offset",
    ]
    assert _complete(script, "headrace", "produce", "t", "--value-format", "") == [
        "avro",
        "base64",
        "json",
        "json-schema",
        "long",
        "protobuf",
        "string",
    ]
    assert _complete(script, "headrace", "completion", "") == [
        "--help",
        "-h",
        "bash",
        "fish",
        "zsh",
    ]


def test_usage_errors_exit_2_and_errors_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    from brokerproc import free_port
    from clirun import headrace as run

    assert run(capsys, "topics", check=False).code == 2  # no action
    assert run(capsys, "consume", "t", "--isolation-level", "dirty", check=False).code == 2
    unreachable = run(
        capsys, "topics", "list", "--bootstrap-servers", f"127.0.0.1:{free_port()}", check=False
    )
    unreachable.one_line_error("cannot reach a broker", code=1)


def test_run_reads_a_dot_env_file_below_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "topo.py").write_text(TOPOLOGY)
    target = f"{tmp_path / 'topo.py'}:topology"
    for name in ("HEADRACE_LOG_LEVEL", "HEADRACE_APPLICATION_ID", "HEADRACE_STATE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text(
        "# written for the team\n"
        "export HEADRACE_APPLICATION_ID=from-dotenv\n"
        'HEADRACE_LOG_LEVEL="warning"  \n'
        "HEADRACE_STATE_DIR='/srv/state' \n"
        "DATABASE_URL=postgres://elsewhere  # not ours\n"
    )
    settings = build_app(build_parser().parse_args(["run", target])).settings
    assert (settings.application_id, settings.log_level) == ("from-dotenv", "WARNING")
    assert str(settings.state_dir) == "/srv/state"

    monkeypatch.setenv("HEADRACE_LOG_LEVEL", "error")  # the real environment wins
    assert build_app(build_parser().parse_args(["run", target])).settings.log_level == "ERROR"
    flag = build_parser().parse_args(["run", target, "--log-level", "debug"])
    assert build_app(flag).settings.log_level == "DEBUG"  # and a flag over both

    other = tmp_path / "prod.env"
    other.write_text("HEADRACE_APPLICATION_ID=prod\n")
    chosen = build_parser().parse_args(["run", target, "--env-file", str(other)])
    assert build_app(chosen).settings.application_id == "prod"


def test_bad_env_files_are_one_line(tmp_path: Path) -> None:
    (tmp_path / "topo.py").write_text(TOPOLOGY)
    target = f"{tmp_path / 'topo.py'}:topology"
    missing = _headrace("run", target, "--env-file", str(tmp_path / "nope.env"))
    assert (missing.returncode, missing.stderr) == (
        1,
        f"headrace run: error: no such env file: {tmp_path / 'nope.env'}\n",
    )
    (tmp_path / "bad.env").write_text("HEADRACE_APPLICATION_ID=a\nthis is not a setting\n")
    bad = _headrace("run", target, "--env-file", str(tmp_path / "bad.env"))
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1
    assert "bad.env, line 2: expected KEY=VALUE" in bad.stderr


def test_describe_prints_the_topology_of_any_target(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from clirun import headrace as run

    (tmp_path / "topo.py").write_text(
        TOPOLOGY + "\nfrom headrace import App\napp = App('describe-me', topology)\n"
    )
    for name in ("topology", "app"):
        out = run(capsys, "describe", f"{tmp_path / 'topo.py'}:{name}").out
        assert "Sub-topology: 0" in out and "in" in out and "out" in out
    out = run(capsys, "describe", "headrace.examples.page_views:build_topology").out
    assert "page-views-per-minute" in out
    run(capsys, "describe", f"{tmp_path / 'topo.py'}:absent", check=False).one_line_error(
        "has no attribute 'absent'"
    )


def test_dot_env_quoting() -> None:
    import doctest

    from headrace.streams import _dotenv

    assert doctest.testmod(_dotenv).failed == 0
    parsed = _dotenv.parse(
        'HEADRACE_A="x\\ty \\"q\\" # kept"\nHEADRACE_B=plain # comment\n'
        "HEADRACE_C='raw \\n'\nHEADRACE_D=\n"
    )
    assert parsed == {
        "HEADRACE_A": 'x\ty "q" # kept',
        "HEADRACE_B": "plain",
        "HEADRACE_C": "raw \\n",
        "HEADRACE_D": "",
    }
    with pytest.raises(Exception, match="line 1: unterminated"):
        _dotenv.parse('HEADRACE_A="open\n')


@pytest.mark.parametrize(
    ("argv", "usage", "hint"),
    [
        (["consume", "t", "--from-begining"], "headrace consume", "--from-beginning"),
        (["topics", "create", "t", "--partitons", "3"], "headrace topics create", "--partitions"),
        (["groups", "list", "--sate", "stable"], "headrace groups list", "--state"),
        (["produce", "t", "--value-fromat=json"], "headrace produce", "--value-format"),
    ],
)
def test_a_misspelt_flag_shows_its_subcommands_usage_and_the_nearest_flag(
    capsys: pytest.CaptureFixture[str], argv: list[str], usage: str, hint: str
) -> None:
    from clirun import headrace as run

    done = run(capsys, *argv, check=False)
    assert done.code == 2
    assert done.err.startswith(f"usage: {usage} "), done.err
    bad = next(word for word in argv if word.startswith("--"))
    assert f"error: unrecognized arguments: {bad}" in done.err, done.err
    assert done.err.rstrip().endswith(f"did you mean {hint}?"), done.err


def test_a_flag_like_no_other_gets_no_guess(capsys: pytest.CaptureFixture[str]) -> None:
    from clirun import headrace as run

    done = run(capsys, "topics", "list", "--zzzzzz", check=False)
    assert done.code == 2
    assert done.err.startswith("usage: headrace topics list ")
    assert done.err.rstrip().endswith("error: unrecognized arguments: --zzzzzz"), done.err


CLICKS_APP = """\
from headrace import App, StreamsBuilder

builder = StreamsBuilder()
builder.stream("clicks").to("counted")
app = App(topology=builder, application_id="clicks")
"""


def _headrace_here(folder: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """The installed ``headrace`` script run in ``folder``, as a user types it there (not
    ``python -m``, which would put the folder on the import path)."""
    script = Path(sys.executable).with_name("headrace")
    base = {k: v for k, v in os.environ.items() if not k.startswith("HEADRACE_")}
    return subprocess.run(
        [str(script), *argv], capture_output=True, text=True, env=base, cwd=folder, timeout=60
    )


@pytest.mark.parametrize(
    ("target", "said"),
    [
        ("clicks_app:app", "no module named 'clicks_app'; did you mean clicks_app.py:app?"),
        (
            "clicks_app.py",
            "target must look like path/to/app.py:app or module:app, not 'clicks_app.py'; "
            "did you mean clicks_app.py:app?",
        ),
        ("clicks_app", "did you mean clicks_app.py:app?"),
        (
            "clicks_app.py:ap",
            "clicks_app.py has no attribute 'ap'; did you mean clicks_app.py:app?",
        ),
        ("click_app.py:app", "no such file: click_app.py; did you mean clicks_app.py?"),
        ("app/clicks_app.py:app", "no such file: app/clicks_app.py"),
        ("nothing_here:app", "no module named 'nothing_here'"),
    ],
)
def test_run_says_what_a_target_that_names_nothing_likely_meant(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    target: str,
    said: str,
) -> None:
    from clirun import headrace as run

    # As the ``headrace`` script runs: the current folder is not on the import path.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".", str(tmp_path))])
    monkeypatch.delitem(sys.modules, "clicks_app", raising=False)  # loading one keeps it
    (tmp_path / "clicks_app.py").write_text(CLICKS_APP)
    done = run(capsys, "run", target, check=False)
    done.one_line_error(said)
    assert done.err.startswith("headrace run: error: ")
    if "did you mean" not in said:
        assert "did you mean" not in done.err


def test_a_module_that_fails_to_import_is_not_taken_for_a_missing_file(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from clirun import headrace as run

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [*sys.path, str(tmp_path)])
    monkeypatch.delitem(sys.modules, "broken", raising=False)
    (tmp_path / "broken.py").write_text("import no_such_dependency\n")
    done = run(capsys, "run", "broken:app", check=False)
    done.one_line_error("No module named 'no_such_dependency'")
    assert "did you mean" not in done.err


@pytest.mark.parametrize("servers", ["nohost:9092", "127.0.0.1:{port}"])
def test_run_against_no_broker_is_one_plain_line(tmp_path: Path, servers: str) -> None:
    from brokerproc import free_port

    servers = servers.format(port=free_port())
    (tmp_path / "clicks_app.py").write_text(CLICKS_APP)
    done = _headrace_here(
        tmp_path,
        "run",
        "clicks_app.py:app",
        "--bootstrap-servers",
        servers,
        "--startup-timeout-ms",
        "1500",
        "--state-dir",
        str(tmp_path / "state"),
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    assert last == (
        "headrace run: error: start-up gave up waiting for the cluster after 1.5 s "
        "(startup_timeout_ms=1500) while connecting to the cluster: "
        f"cannot reach a broker at {servers} (is one running?)"
    ), done.stderr
    assert "KafkaConnectionError" not in done.stderr and "AddressFamily" not in done.stderr
    assert "Traceback" not in done.stderr


def test_spark_export_takes_the_topic_as_produce_and_consume_do(
    capsys: pytest.CaptureFixture[str], broker_process: Any, tmp_path: Path
) -> None:
    from clirun import headrace as run
    from deltalake import DeltaTable

    bs = ["--bootstrap-servers", broker_process.bootstrap]
    run(capsys, "produce", "handed", *bs, stdin="a\nb\nc\n")
    for spelt in (["handed"], ["--topic", "handed"]):
        table = tmp_path / "-".join(spelt).strip("-")
        done = run(
            capsys, "spark", "export", *spelt, "--delta-path", str(table), "--no-progress", *bs
        )
        assert done.out.startswith(f"handed: 3 records in 1 commit(s) to {table}"), done.out
        assert DeltaTable(str(table)).to_pyarrow_table().num_rows == 3
    run(
        capsys, "spark", "export", "--delta-path", str(tmp_path / "x"), *bs, check=False
    ).one_line_error("give the topic: TOPIC or --topic TOPIC", code=2)
    run(
        capsys, "spark", "export", "a", "--topic", "b", "--delta-path", str(tmp_path / "x"), *bs,
        check=False,
    ).one_line_error("give the topic once", code=2)  # fmt: skip

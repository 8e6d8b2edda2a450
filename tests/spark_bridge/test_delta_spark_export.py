"""delta-spark as a Spark user installs it, in .venv-delta-spark (the ``delta-spark`` extra:
pyspark 4.2.0 and delta-spark 4.4.0, with jvm/delta's jars), against a broker subprocess.

What must hold:
- ``headrace spark export --engine delta-spark`` writes every record exactly once even
  when its driver (the CLI's Python and Spark's JVM) is SIGKILLed mid-run and rerun, and
  the table holds the same rows as the delta-rs export of the same topic;
- a batch replayed from the checkpoint (its Delta commit made, its checkpoint commit not)
  commits nothing: the ``txnAppId``/``txnVersion`` half of exactly once, on its own;
- the demo's report runs on ``format("delta")`` over a table the delta-rs export wrote,
  with time travel and ``MERGE``;
- where delta-spark cannot run, the engine says what to install instead of failing late.

The main virtualenv (pyspark 4.3) runs these tests; Spark with delta-spark runs in
subprocesses of the other. Without that virtualenv or the jars the tests fail, saying how
to get them.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import deltalake
import pyarrow as pa
import pytest
from brokerproc import BrokerProcess
from kafka_clients import Confluent, unique
from spark_jvm import quick_spark_env

from headrace import cli
from headrace.spark_bridge import DeltaSink, OptionError, export_topic
from headrace.spark_bridge._delta_spark_export import DeltaSparkExport
from jvm import lib_dir

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv-delta-spark"
REPORT_JOB = Path(__file__).with_name("delta_spark_report_job.py")
RECORDS = 200_000
PER_BATCH = 25_000
RUN_TIMEOUT = 420.0  # one export run; Spark starts in 10-60 s on a loaded machine


def venv_program(name: str) -> str:
    program = VENV / "bin" / name
    assert program.exists(), (
        f"{program} is missing: `scripts/dev test` sets up {VENV.name}"
        " (the project with its delta-spark extra)"
    )
    return str(program)


def delta_env() -> dict[str, str]:
    env = quick_spark_env(os.environ)
    # A Spark session of this process points these at pyspark 4.3's interpreter.
    for name in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_HOME", "PYTHONPATH"):
        env.pop(name, None)
    return env


def delta_jars() -> str:
    return str(lib_dir("delta"))


@pytest.fixture(scope="module")
def bootstrap(broker_process: BrokerProcess) -> str:
    return broker_process.bootstrap


def export_command(bootstrap: str, topic: str, path: Path, *extra: str) -> list[str]:
    return [
        venv_program("headrace"),
        "spark",
        "export",
        topic,
        "--engine",
        "delta-spark",
        "--delta-path",
        str(path),
        "--bootstrap-servers",
        bootstrap,
        "--commit-records",
        str(PER_BATCH),
        "--delta-jars",
        delta_jars(),
        *extra,
    ]


def run_export(command: list[str]) -> str:
    done = subprocess.run(
        command, env=delta_env(), capture_output=True, text=True, timeout=RUN_TIMEOUT
    )
    assert done.returncode == 0, f"export failed ({done.returncode}):\n{done.stderr[-5000:]}"
    return done.stdout


def commits(path: Path) -> list[Path]:
    return sorted((path / "_delta_log").glob("*.json"))


def table_rows(path: Path) -> pa.Table:
    return deltalake.DeltaTable(str(path)).to_pyarrow_table()


def as_set(table: pa.Table) -> set[tuple[Any, ...]]:
    columns = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    return set(zip(*(table[c].to_pylist() for c in columns), strict=True))


def produce(bootstrap: str, topic: str, n: int) -> list[tuple[int, int]]:
    return Confluent().produce(
        bootstrap, topic, [(f"k{i}".encode(), f"v{i}".encode()) for i in range(n)]
    )


@pytest.mark.slow(seconds=130)  # four Spark drivers, one of them killed
@pytest.mark.timeout(4 * RUN_TIMEOUT)  # three runs of the export beside the delta-rs one
def test_delta_spark_export_is_exactly_once_across_a_driver_sigkill(
    bootstrap: str, tmp_path: Path
) -> None:
    topic = unique("dspark")
    Confluent().create_topic(bootstrap, topic, 3)
    placed = produce(bootstrap, topic, RECORDS)
    path = tmp_path / "delta-spark"
    command = export_command(bootstrap, topic, path)

    # 1. Kill the whole driver (CLI and its JVM, one process group) once a batch is in.
    log = tmp_path / "killed-run.log"
    with log.open("w") as stderr:
        victim = subprocess.Popen(
            command,
            env=delta_env(),
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + RUN_TIMEOUT
        while not commits(path) and victim.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert victim.poll() is None, (
            f"the export ended ({victim.returncode}) before the kill:\n{log.read_text()[-5000:]}"
        )
        assert commits(path), "no Delta commit within the time allowed"
    finally:
        with contextlib.suppress(ProcessLookupError):  # ended on its own: failed above
            os.killpg(victim.pid, signal.SIGKILL)
        victim.wait(30)
    partial = table_rows(path).num_rows
    assert 0 < partial < RECORDS, partial

    # 2. Rerun: it resumes from the checkpoint and ends caught up.
    out = run_export(command)
    assert "through delta-spark" in out, out
    got = table_rows(path)
    pairs = list(zip(got["partition"].to_pylist(), got["offset"].to_pylist(), strict=True))
    assert len(pairs) == RECORDS  # no duplicates...
    assert set(pairs) == set(placed)  # ...and no gaps

    # 3. The same rows as the delta-rs engine's export of the same topic.
    reference = tmp_path / "delta-rs"
    assert export_topic(bootstrap, topic, str(reference)).records == RECORDS
    assert as_set(got) == as_set(table_rows(reference))

    # 4. Replay the last batch: its checkpoint commit gone, as if the driver had died just
    # after the Delta commit. Spark runs it again with the same id; Delta skips it.
    version = deltalake.DeltaTable(str(path)).version()
    done_log = path / "_checkpoints" / "headrace-export" / "commits"
    last = max((p for p in done_log.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    last.unlink()
    (done_log / f".{last.name}.crc").unlink(missing_ok=True)
    out = run_export(command)
    assert "records in 1 micro-batch" in out, out
    assert deltalake.DeltaTable(str(path)).version() == version
    assert table_rows(path).num_rows == RECORDS
    # the batch ids the table recorded, which made the replay a no-op
    assert deltalake.DeltaTable(str(path)).transaction_version("headrace-export") is not None

    # 5. Caught up: a run with nothing new runs no batch and commits nothing.
    assert "nothing new" in run_export(command)
    assert deltalake.DeltaTable(str(path)).version() == version


def test_a_table_without_its_checkpoint_is_refused(bootstrap: str, tmp_path: Path) -> None:
    """Batch ids start again at 0 without the checkpoint: each would be skipped as written."""
    path = tmp_path / "t"
    DeltaSink(str(path), app_id="headrace-export").append_batch(pa.table({"n": [1]}), 3)
    job = DeltaSparkExport(bootstrap, "any", str(path), checkpoint=str(tmp_path / "nowhere"))
    with pytest.raises(OptionError, match=r"checkpoint .* is missing"):
        job.run()


def test_delta_spark_on_the_wrong_pyspark_says_what_to_install(
    bootstrap: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """This process has pyspark 4.3, on which delta-spark 4.4's reads fail."""
    topic = unique("dspark")
    Confluent().create_topic(bootstrap, topic, 1)
    argv = ["spark", "export", topic, "--engine", "delta-spark", "--delta-path", str(tmp_path)]
    assert cli.main([*argv, "--bootstrap-servers", bootstrap]) == 1
    err = capsys.readouterr().err
    assert "pyspark 4.2.0" in err and "headrace[delta-spark]" in err, err
    # what only one engine does is refused by the other, before anything is read
    for flags, expected in [
        (["--checkpoint", "c"], "are for --engine delta-spark"),
        (["--delta-jars", "j"], "are for --engine delta-spark"),
        (["--engine", "delta-spark", "--value-format", "json"], "the delta-rs engine's"),
    ]:
        argv = ["spark", "export", topic, "--delta-path", str(tmp_path), *flags]
        assert cli.main([*argv, "--bootstrap-servers", bootstrap]) == 1
        assert expected in capsys.readouterr().err
    assert not (tmp_path / "_delta_log").exists()


@pytest.mark.slow(seconds=50)
@pytest.mark.timeout(2 * RUN_TIMEOUT)
def test_the_demo_report_runs_on_format_delta_with_time_travel_and_merge(
    bootstrap: str, tmp_path: Path
) -> None:
    topic = unique("minutes")
    Confluent().create_topic(bootstrap, topic, 2)
    pages = ["/home", "/docs", "/pricing"]
    counts = {
        (page, f"2026-01-01T00:{m:02d}"): 10 * (i + 1) + m
        for i, page in enumerate(pages)
        for m in range(6)
    }

    def send(keys: list[tuple[str, str]]) -> None:
        rows = [
            (p.encode(), json.dumps({"page": p, "minute": m, "views": counts[p, m]}).encode())
            for p, m in keys
        ]
        Confluent().produce(bootstrap, topic, rows)

    def per_page(keys: list[tuple[str, str]]) -> dict[str, int]:
        out: dict[str, int] = {}
        for key in keys:
            out[key[0]] = out.get(key[0], 0) + counts[key]
        return out

    first = [k for k in counts if k[1] < "2026-01-01T00:03"]
    later = [k for k in counts if k not in first]
    path = tmp_path / "minutes"
    # Two delta-rs exports, two versions: 0 holds the first three minutes.
    send(first)
    export_topic(bootstrap, topic, str(path), value_format="json")
    send(later)
    export_topic(bootstrap, topic, str(path), value_format="json")
    assert deltalake.DeltaTable(str(path)).version() == 1

    minutes = sorted({m for _p, m in counts} | {"2026-01-01T00:06"})
    fixed = ("/home", "2026-01-01T00:02")
    correction = {"rows": [[*fixed, 1000], ["/blog", "2026-01-01T00:06", 7]]}
    out = tmp_path / "answers.json"
    done = subprocess.run(
        [
            venv_program("python"),
            str(REPORT_JOB),
            str(path),
            delta_jars(),
            json.dumps(minutes),
            json.dumps(correction),
            str(out),
        ],
        env=delta_env(),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert done.returncode == 0, f"the report failed ({done.returncode}):\n{done.stderr[-5000:]}"
    answers = json.loads(out.read_text())

    everything = per_page(list(counts))
    assert answers["cli_status"] == 0
    for page, views in everything.items():
        assert page in answers["cli_output"] and str(views) in answers["cli_output"]
    assert answers["latest"] == everything
    assert answers["version_0"] == per_page(first)
    assert answers["sql_version_0_rows"] == len(first)
    assert answers["merge_operation"] == "MERGE"
    merged = dict(everything)
    merged["/home"] += 1000 - counts[fixed]
    merged["/blog"] = 7
    assert answers["after_merge"] == merged
    assert answers["before_merge"] == everything

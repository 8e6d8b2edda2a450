"""The hand-off on a Spark standalone cluster, submitted as a Spark user submits a job.

A master and two workers (one core, 1 GiB each) run as processes of their own on
loopback (``spark_cluster.StandaloneCluster``). ``spark-submit`` runs
``cluster_handoff_job.py`` against them in client mode, with headrace shipped in
``--py-files``: the wheel built from this working tree, under the name ``headrace.zip``
(a wheel is a zip archive; Spark puts only ``.zip``, ``.egg`` and ``.jar`` files of
``--py-files`` on the executors' path).

Both the driver and the executors run a Python that has headrace's dependencies (pyspark,
pyarrow, deltalake, confluent-kafka) but not headrace: a virtualenv that sees the project's
site-packages as a plain directory, so the editable install's import hook (a ``.pth`` file
there) never runs. Whatever headrace they import can only come from what was shipped.

What must hold:
- every one of 100,000 records over 4 partitions is in the Delta table once, at its own
  partition and offset;
- the table records the offsets the export goes on from: ``headrace spark export`` run
  afterwards finds nothing new;
- the records were read on both workers, in executors the master launched for the job;
- the executors (and the driver) imported headrace from the shipped archive.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import deltalake
import pytest
from brokerproc import BrokerProcess
from kafka_clients import Confluent, unique
from source_tree import copy_sources
from spark_cluster import StandaloneCluster, loopback_env, spark_program
from spark_jvm import QUICK_JVM

from headrace import cli
from headrace.spark_bridge import DeltaSink, TopicPartition

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

JOB = Path(__file__).with_name("cluster_handoff_job.py")
RECORDS = 100_000
PARTITIONS = 4
SUBMIT_TIMEOUT = 600  # the whole job; executors take 10-60 s to come up on a busy machine
SITE_PACKAGES = Path(deltalake.__file__).parents[1]  # where the project's dependencies are


@dataclass(frozen=True)
class Run:
    cluster: StandaloneCluster
    bootstrap: str
    topic: str
    table: Path
    shipped: Path  # headrace.zip, as given to spark-submit
    python: Path  # the interpreter of the driver and the executors
    report: dict[str, Any]  # the job's own (cluster_handoff_job.py)
    master: dict[str, Any]  # the master's JSON once the job was done


def _headrace_zip(work: Path) -> Path:
    """``pip wheel`` of the working tree, under the name Spark ships on executors' paths."""
    src, dist = work / "src", work / "dist"
    copy_sources(src)
    built = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation"),
            *("--quiet", "--wheel-dir", str(dist), str(src)),
        ],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, f"pip wheel failed:\n{built.stdout}\n{built.stderr[-5000:]}"
    (wheel,) = dist.glob("headrace-*.whl")
    return Path(shutil.copy(wheel, work / "headrace.zip"))


def _python_without_headrace(work: Path) -> Path:
    """A virtualenv whose only packages are the project's site-packages, as a plain path."""
    venv = work / "cluster-python"
    made = subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    (own,) = venv.glob("lib/python3*/site-packages")
    # A path line in a .pth adds the directory; the .pth files inside it are not read.
    (own / "project_dependencies.pth").write_text(f"{SITE_PACKAGES}\n")
    return venv / "bin" / "python"


def _produce(bootstrap: str, topic: str) -> None:
    """Record i to partition i % 4, one by one, so each lands at offset i // 4."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for i in range(RECORDS):
        while True:
            try:
                producer.produce(
                    topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % PARTITIONS
                )
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(60) == 0


def _submit(cluster: StandaloneCluster, shipped: Path, python: Path, *args: str) -> None:
    env = loopback_env()
    for name in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):  # the --conf below decide
        env.pop(name, None)
    done = subprocess.run(
        [
            spark_program("spark-submit"),
            *("--master", cluster.master_url),
            *("--py-files", str(shipped)),
            *("--conf", f"spark.pyspark.python={python}"),
            *("--conf", f"spark.pyspark.driver.python={python}"),
            *("--conf", "spark.driver.host=127.0.0.1"),
            *("--conf", "spark.ui.enabled=false"),
            *("--conf", f"spark.executor.extraJavaOptions={QUICK_JVM}"),
            # schedule only once both executors are up, so neither worker sits the job out
            *("--conf", "spark.scheduler.minRegisteredResourcesRatio=1.0"),
            *("--conf", "spark.scheduler.maxRegisteredResourcesWaitingTime=300s"),
            str(JOB),
            *args,
        ],
        cwd=shipped.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=SUBMIT_TIMEOUT,
    )
    assert done.returncode == 0, (
        f"spark-submit failed ({done.returncode}):\n{done.stdout[-3000:]}\n"
        f"{done.stderr[-8000:]}\n"
        + "\n".join(cluster.log(name) for name in ("master", "worker-1", "worker-2"))
    )


@pytest.fixture(scope="module")
def run(broker_process: BrokerProcess, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    work = tmp_path_factory.mktemp("standalone")
    shipped = _headrace_zip(work)
    python = _python_without_headrace(work)
    bootstrap = broker_process.bootstrap
    topic = unique("cluster-handoff")
    Confluent().create_topic(bootstrap, topic, PARTITIONS)
    _produce(bootstrap, topic)
    table, report = work / "lake" / "records", work / "report.json"
    with StandaloneCluster(work / "spark", workers=2, cores=1, memory="1g") as cluster:
        _submit(cluster, shipped, python, bootstrap, topic, str(table), str(report))
        yield Run(
            cluster,
            bootstrap,
            topic,
            table,
            shipped,
            python,
            json.loads(report.read_text()),
            cluster.status(),
        )


def test_the_cluster_python_cannot_import_headrace_by_itself(run: Run) -> None:
    # The control for the tests below: without --py-files, this interpreter has no headrace
    # (but has what headrace needs).
    done = subprocess.run(
        [str(run.python), "-c", "import deltalake, pyspark, pyarrow, confluent_kafka, headrace"],
        cwd=run.python.parents[2],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "No module named 'headrace'" in done.stderr, done.stderr


def test_every_record_is_in_the_table_once(run: Run) -> None:
    rows = deltalake.DeltaTable(str(run.table)).to_pyarrow_table()
    got = sorted(
        zip(*(rows[c].to_pylist() for c in ("partition", "offset", "key", "value")), strict=True)
    )
    assert got == sorted(
        (i % PARTITIONS, i // PARTITIONS, f"k{i}".encode(), f"v{i}".encode())
        for i in range(RECORDS)
    )
    assert set(rows["topic"].to_pylist()) == {run.topic}
    assert run.report["read"] == run.report["written"] == RECORDS


def test_the_table_records_where_the_export_goes_on(run: Run) -> None:
    recorded = DeltaSink(str(run.table), app_id="headrace-export").committed_offsets(
        TopicPartition(run.topic, p) for p in range(PARTITIONS)
    )
    per_partition = RECORDS // PARTITIONS
    assert recorded == {TopicPartition(run.topic, p): per_partition for p in range(PARTITIONS)}
    version = deltalake.DeltaTable(str(run.table)).version()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status = cli.main(
            [
                *("spark", "export", run.topic, "--delta-path", str(run.table)),
                *("--bootstrap-servers", run.bootstrap, "--no-progress"),
            ]
        )
    assert status == 0
    assert "nothing new" in printed.getvalue()
    assert deltalake.DeltaTable(str(run.table)).version() == version


def test_the_records_were_read_on_both_workers(run: Run) -> None:
    assert run.report["master"] == run.cluster.master_url
    assert run.report["spark_partitions"] == PARTITIONS
    (app,) = run.master["completedapps"]
    assert (app["name"], app["state"], app["cores"]) == ("headrace-cluster-handoff", "FINISHED", 2)
    # Each worker runs an executor in WORK_DIR/APP_ID/EXECUTOR_ID.
    by_worker: dict[Path, int] = {}
    for read in run.report["read_by"]:
        executor_dir = Path(read["read_in"])
        assert executor_dir.parent.name == app["id"], read
        worker = executor_dir.parents[1]
        by_worker[worker] = by_worker.get(worker, 0) + read["records"]
    assert set(by_worker) == {run.cluster.work_dir(1), run.cluster.work_dir(2)}
    assert all(n > 0 for n in by_worker.values()), by_worker
    assert sum(by_worker.values()) == RECORDS


def test_executors_imported_headrace_from_the_shipped_archive(run: Run) -> None:
    for read in run.report["read_by"]:
        # Spark fetched headrace.zip into the executor's directory and put it on the path.
        assert read["headrace_from"] == os.path.join(
            read["read_in"], "headrace.zip", "headrace", "__init__.py"
        )
        assert read["python"] == str(run.python)
    assert run.report["driver_python"] == str(run.python)
    assert run.report["driver_headrace_from"] == str(run.shipped / "headrace" / "__init__.py")

"""``format("headrace")`` with no set-up, on a cluster whose executors are processes of
their own (``local-cluster[2,1,1024]``: two workers, one core and 1 GiB each).

The Spark program (``autoload_job.py``) runs in a fresh process: its JVM starts with
the master and environment given here, and nothing in it has called
``register_source`` or ``spark_session``. PySpark finds ``pyspark_headrace`` on its own.

How the pieces are found:
- local-cluster launches executors from ``$SPARK_HOME`` (``bin/`` and ``jars/``) and
  writes their work directories under ``$SPARK_HOME/work``. The pip-installed pyspark is
  a complete Spark home; a temporary home that links its ``bin`` and ``jars`` keeps the
  work directories out of the virtualenv.
- PySpark lists ``pyspark_*`` modules with ``pkgutil.iter_modules()``. A wheel puts
  ``pyspark_headrace`` in site-packages, where it is listed wherever Spark starts. An
  editable install serves packages through an import hook that ``iter_modules`` cannot
  list (pypa/setuptools#3548); Python workers run with ``python -m``, so their working
  directory is on their path, and run from the checkout's root they list the checkout's
  ``pyspark_headrace``. The job runs from there, as a developer's own Spark would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyspark
import pytest
from brokerproc import BrokerProcess
from kafka_clients import Confluent, unique
from spark_jvm import quick_spark_env

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
JOB = Path(__file__).with_name("autoload_job.py")
MASTER = "local-cluster[2,1,1024]"
RECORDS = 150
PARTITIONS = 3


@dataclass(frozen=True)
class Run:
    produced: list[list[Any]]  # [partition, offset, key, value], sorted
    report: dict[str, Any]
    stderr: str  # the driver's, with Spark's log


def _spark_home(tmp: Path) -> Path:
    """A Spark home for local-cluster, built from the pip-installed pyspark."""
    installed = Path(pyspark.__file__).parent
    missing = [
        p for p in ("bin/spark-class", "bin/spark-submit", "jars") if not (installed / p).exists()
    ]
    assert not missing, f"pyspark at {installed} lacks {missing}: local-cluster cannot start"
    home = tmp / "spark-home"
    home.mkdir()
    for part in ("bin", "jars"):
        (home / part).symlink_to(installed / part, target_is_directory=True)
    return home


def _produce(bootstrap: str, topic: str) -> list[list[Any]]:
    """Record i to partition i % 3, one by one, so each lands at offset i // 3."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for i in range(RECORDS):
        producer.produce(
            topic, key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % PARTITIONS
        )
    assert producer.flush(30) == 0
    return sorted([i % PARTITIONS, i // PARTITIONS, f"k{i}", f"v{i}"] for i in range(RECORDS))


@pytest.fixture(scope="module")
def run(broker_process: BrokerProcess, tmp_path_factory: pytest.TempPathFactory) -> Run:
    tmp = tmp_path_factory.mktemp("autoload")
    bootstrap = broker_process.bootstrap
    topic = unique("autoload")
    Confluent().create_topic(bootstrap, topic, PARTITIONS)
    produced = _produce(bootstrap, topic)
    env = {
        **quick_spark_env(os.environ),
        "SPARK_HOME": str(_spark_home(tmp)),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    env.pop("PYTHONPATH", None)  # nothing on the path but what is installed (and the cwd)
    done = subprocess.run(
        [sys.executable, str(JOB), MASTER, bootstrap, topic, str(tmp / "checkpoint")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, (
        f"the Spark job on {MASTER} failed ({done.returncode}):\n"
        f"{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    )
    return Run(produced, json.loads(done.stdout.strip().splitlines()[-1]), done.stderr)


def test_the_job_ran_on_two_executor_processes(run: Run) -> None:
    assert run.report["master"] == MASTER
    assert run.report["executors"] == ["0", "1"]


def test_batch_read_without_registration_gets_exact_rows(run: Run) -> None:
    assert run.report["batch"] == run.produced
    # one Spark partition per topic-partition, as Spark's own Kafka source plans
    assert run.report["batch_partitions"] == PARTITIONS


def test_streaming_read_without_registration_gets_exact_rows(run: Run) -> None:
    assert run.report["stream"] == run.produced
    # 150 records at most 40 a micro-batch: the source's offsets carried over batches.
    assert run.report["stream_batches"] >= 4


def test_the_driver_never_imported_headrace(run: Run) -> None:
    # Spark's own lookup, in a worker process, found and loaded the source.
    assert run.report["driver_imported"] == []


def test_registering_again_is_quiet_and_harmless(run: Run) -> None:
    assert run.report["batch_after_register"] == run.produced
    assert "replaced a statically registered data source" not in run.stderr


def test_the_hook_loads_nothing_until_spark_asks() -> None:
    """Spark imports every ``pyspark_*`` module it finds: ours must cost nothing then,
    and hand over the real source only when ``DefaultSource`` is read."""
    code = (
        "import sys, pyspark_headrace; "
        "print(sorted(m for m in sys.modules if m.startswith(('pyspark', 'headrace')))); "
        "from pyspark.sql.datasource import DataSource; "
        "from headrace.spark_bridge import HeadraceDataSource; "
        "s = pyspark_headrace.DefaultSource; "
        "print(s is HeadraceDataSource, issubclass(s, DataSource), s.name())"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["['pyspark_headrace']", "True True headrace"]


def test_a_bridge_that_cannot_load_is_skipped_not_fatal_to_spark() -> None:
    # As under a pyspark older than the spark extra asks for: Spark's lookup checks
    # hasattr(), which turns only AttributeError into "not a data source".
    code = (
        "import sys; sys.modules['pyspark.sql.streaming.datasource'] = None; "
        "import pyspark_headrace; print(hasattr(pyspark_headrace, 'DefaultSource'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"

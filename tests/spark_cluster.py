"""A Spark standalone cluster on loopback: one master and its workers, each a process of its own.

Started as Spark's ``sbin`` scripts would start them, without the scripts (they write pid
files and logs under ``$SPARK_HOME``): ``spark-class`` of the pip-installed pyspark runs
``deploy.master.Master`` and ``deploy.worker.Worker`` directly. Everything the daemons
write (their logs, the workers' work directories, where executors run and fetch what a
job ships) stays under the ``root`` given.

    with StandaloneCluster(tmp_path / "spark", workers=2) as cluster:
        subprocess.run(["spark-submit", "--master", cluster.master_url, "job.py"])
        cluster.status()   # the master's JSON: workers, running and completed apps

The master is asked (``/json/`` on its web UI) until every worker is ALIVE; a cluster that
does not come up is stopped before the error is raised. ``stop()`` ends the daemons by
their pids: SIGTERM, then SIGKILL for one that does not exit.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pyspark
from brokerproc import free_port
from processes import StartStop, terminate
from spark_jvm import quick_spark_env

SPARK_HOME = Path(pyspark.__file__).parent  # the pip package is a complete Spark home
STOP_WITHIN = 30.0  # seconds a daemon has to exit on SIGTERM


def spark_program(name: str) -> str:
    """A program of the installed Spark's ``bin/`` (``spark-submit``, ``spark-class``)."""
    program = SPARK_HOME / "bin" / name
    assert program.exists(), f"pyspark at {SPARK_HOME} lacks bin/{name}"
    return str(program)


def loopback_env() -> dict[str, str]:
    """The environment Spark's daemons and drivers need here: loopback, this Spark home,
    the tests' JVM options (``spark_jvm``)."""
    env = quick_spark_env({k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    env["SPARK_HOME"] = str(SPARK_HOME)
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    # The master's REST submission server listens on 6066 unless told otherwise, which
    # two clusters (or anything else on that port) would fight over; jobs here come
    # through spark-submit in client mode, which does not use it.
    env["SPARK_MASTER_OPTS"] = "-Dspark.master.rest.enabled=false"
    return env


class StandaloneCluster(StartStop):
    """A master on ``127.0.0.1`` and ``workers`` workers of ``cores`` cores and ``memory`` each."""

    def __init__(self, root: Path, *, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        self.root = root
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.port = free_port()
        self.web_port = free_port()
        self._procs: list[tuple[str, subprocess.Popen[bytes]]] = []

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    @property
    def web_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def work_dir(self, worker: int) -> Path:
        """Where worker ``worker`` (1-based) runs its executors."""
        return self.root / f"worker-{worker}" / "work"

    def start(self, timeout: float = 120.0) -> StandaloneCluster:
        try:
            self._spawn(
                "master",
                "org.apache.spark.deploy.master.Master",
                *("--host", "127.0.0.1", "--port", str(self.port)),
                *("--webui-port", str(self.web_port)),
            )
            for n in range(1, self.workers + 1):
                self.work_dir(n).mkdir(parents=True)
                self._spawn(
                    f"worker-{n}",
                    "org.apache.spark.deploy.worker.Worker",
                    self.master_url,
                    *("--host", "127.0.0.1", "--webui-port", str(free_port())),
                    *("--cores", str(self.cores), "--memory", self.memory),
                    *("--work-dir", str(self.work_dir(n))),
                )
            self._wait_for_workers(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self, name: str, main_class: str, *args: str) -> None:
        log_dir = self.root / name
        log_dir.mkdir(parents=True, exist_ok=True)
        with open(log_dir / "daemon.log", "ab") as log:
            proc = subprocess.Popen(
                [spark_program("spark-class"), main_class, *args],
                cwd=log_dir,
                env=loopback_env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self._procs.append((name, proc))

    def status(self) -> dict[str, Any]:
        """The master's view: ``workers``, ``activeapps``, ``completedapps``, ..."""
        with urllib.request.urlopen(f"{self.web_url}/json/", timeout=5) as answer:
            found: dict[str, Any] = json.load(answer)
        return found

    def _wait_for_workers(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        seen: Any = None
        while time.monotonic() < deadline:
            for name, proc in self._procs:
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited with {proc.returncode}:\n{self.log(name)}")
            try:
                seen = self.status()
            except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
                seen = None  # the master's web UI is not up yet
            if seen is not None:
                alive = [w for w in seen.get("workers", []) if w.get("state") == "ALIVE"]
                if len(alive) == self.workers:
                    return
            time.sleep(0.5)
        raise RuntimeError(
            f"{self.workers} workers were not ALIVE within {timeout}s; the master said {seen}\n"
            + "\n".join(self.log(name) for name, _ in self._procs)
        )

    def log(self, name: str) -> str:
        """The last lines a daemon (``master``, ``worker-1``, ...) wrote."""
        try:
            return f"--- {name}:\n" + (self.root / name / "daemon.log").read_text()[-4000:]
        except FileNotFoundError:
            return f"--- {name}: no log"

    def stop(self) -> None:
        """Workers first, then the master; each by its pid, SIGKILL if SIGTERM is not enough."""
        terminate([proc for _name, proc in reversed(self._procs)], STOP_WITHIN)
        self._procs = []

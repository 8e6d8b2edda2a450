"""The wheel a user installs works on its own, away from this checkout.

One module-scoped fixture builds a wheel of the working tree with ``python -m build``,
creates a fresh virtualenv in a temporary directory and installs the wheel there
(dependencies come from the configured package index; pip's cache makes repeats fast).
The install is driven by this environment's pip (``pip --python``) into a virtualenv made
without pip of its own: what lands in site-packages is the same, without setting up a pip
in the new virtualenv first, and a recent pip resolves the dependencies in half the time of
the one ``venv`` bundles. Nothing is byte-compiled ahead (``--no-compile``): Python compiles
what the tests import as they import it.
Every command then runs with the virtualenv's own ``headrace`` or ``python``, from a
working directory outside the checkout and without ``PYTHONPATH``, so nothing can be
imported from the repository's folders: what works here works for a user.

The working directory also holds a ``state/`` folder and a ``streams.py`` of the user's,
the names that shadowed ours when the layers installed as top-level packages.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from source_tree import copy_sources

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]

# What the headrace distribution may put at the top of site-packages, besides its
# ``headrace-<version>.dist-info``: the package, and the module Spark finds by name.
TOP_LEVEL = ("headrace", "pyspark_headrace")


@dataclass(frozen=True)
class Installed:
    """The wheel installed in a fresh virtualenv, and a user's directory to run it from."""

    wheel: Path
    venv: Path
    home: Path

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)

    @property
    def site_packages(self) -> Path:
        (found,) = self.venv.glob("lib/python3*/site-packages")
        return found

    def env(self) -> dict[str, str]:
        """The caller's environment without anything that points into the checkout or
        at a broker: no PYTHONPATH, no activated virtualenv, no HEADRACE_* settings."""
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.startswith("HEADRACE_")
        }
        env["PATH"] = os.pathsep.join(
            p for p in env.get("PATH", "").split(os.pathsep) if not p.startswith(str(ROOT))
        )
        env["PYTHONUNBUFFERED"] = "1"
        return env

    def run(
        self, program: str, *args: str, stdin: str | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """The virtualenv's ``program`` (``headrace``, ``python``) with ``args``, from the home directory."""
        return subprocess.run(
            [self.bin(program), *args],
            cwd=self.home,
            env=self.env(),
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def start(self, name: str, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
        """``headrace ARGS`` in the background, its output in ``<home>/<name>.log``."""
        log_path = self.home / f"{name}.log"
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [self.bin("headrace"), *args],
                cwd=self.home,
                env=self.env(),
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        return proc, log_path


def _must(result: subprocess.CompletedProcess[str], what: str) -> None:
    """Fail (never skip) with the command's own output when ``what`` did not work."""
    assert result.returncode == 0, (
        f"{what} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    work = tmp_path_factory.mktemp("wheel")
    src, dist, venv, home = work / "src", work / "dist", work / "venv", work / "home"
    copy_sources(src)
    build = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(src)],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=300,
    )
    _must(build, "python -m build --wheel")
    (wheel,) = dist.glob("headrace-*.whl")
    _must(
        subprocess.run(
            [sys.executable, "-m", "venv", "--without-pip", str(venv)],
            capture_output=True,
            text=True,
            timeout=120,
        ),
        "python -m venv",
    )
    pip = (sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"))
    install = subprocess.run(
        [*pip, "install", "--quiet", "--no-compile", str(wheel)],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=600,
    )
    _must(install, f"pip install {wheel.name}")
    # A user's project: their own state/ folder and streams.py sit beside their code.
    (home / "state").mkdir(parents=True)
    (home / "streams.py").write_text(
        'raise ImportError("the user\'s own streams.py was imported")\n'
    )
    return Installed(wheel, venv, home)


def test_the_distribution_puts_only_headrace_at_the_top_of_site_packages(
    installed: Installed,
) -> None:
    site = installed.site_packages
    (dist_info,) = site.glob("headrace-*.dist-info")
    tops: set[str] = set()
    outside: set[str] = set()
    for line in (dist_info / "RECORD").read_text().splitlines():
        path = (site / line.split(",")[0]).resolve()
        if path.is_relative_to(site):
            top = path.relative_to(site).parts[0]
            if top == "__pycache__":  # the bytecode of a single-file top-level module
                top = path.name.split(".")[0]
            tops.add(top.removesuffix(".py"))
        else:
            outside.add(str(path.relative_to(installed.venv)))
    assert tops - {dist_info.name} <= set(TOP_LEVEL), tops
    assert outside == {"bin/headrace"}
    assert "headrace" in tops
    # The Spark hook ships once the checkout has it (as a package or a module).
    if (ROOT / "pyspark_headrace").is_dir() or (ROOT / "pyspark_headrace.py").is_file():
        assert "pyspark_headrace" in tops, (
            "the checkout has pyspark_headrace; the wheel must ship it"
        )
    # The layers are sub-packages, not top-level names a user's folder could shadow.
    for layer in (
        "client_tools",
        "dsl",
        "streams",
        "state",
        "log_broker",
        "transactions",
        "spark_bridge",
        "examples",
        "schema_registry",
    ):
        assert (site / "headrace" / layer / "__init__.py").is_file(), layer
        assert not (site / layer).exists(), layer


def test_the_wheel_walks_produced_records_in_c(installed: Installed) -> None:
    """Built where a C compiler is, the wheel carries the broker's compiled record walker
    (an optional extension: without a compiler the build leaves it out)."""
    assert list(
        (installed.site_packages / "headrace" / "log_broker" / "records").glob("_crecord_walk.*.so")
    )
    result = installed.run(
        "python",
        "-c",
        "from headrace.log_broker.records._walk import record_walker; print(record_walker())",
    )
    _must(result, "record_walker()")
    assert result.stdout.strip() == "compiled"


def test_headrace_demo_runs_from_the_wheel(installed: Installed) -> None:
    result = installed.run("headrace", "demo", "--no-spark", timeout=120)
    _must(result, "headrace demo --no-spark")
    out = result.stdout
    assert "[broker]   built-in broker on 127.0.0.1:" in out
    assert "page views: 10000 of 10000 counted, in 25 of 25 page-minutes" in out
    assert "[result]   sensor readings:" in out
    assert "[done]     all results match" in out
    assert "Traceback" not in result.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(
    port: int, proc: subprocess.Popen[bytes], log: Path, within: float = 20
) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"broker exited with {proc.returncode}:\n{log.read_text()}"
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"broker did not listen on {port}:\n{log.read_text()}")


def _wait_for(text: str, proc: subprocess.Popen[bytes], log: Path, within: float = 40) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if text in log.read_text():
            return
        assert proc.poll() is None, f"exited with {proc.returncode}:\n{log.read_text()}"
        time.sleep(0.1)
    raise AssertionError(f"{text!r} not seen in time:\n{log.read_text()[-3000:]}")


def _stop(proc: subprocess.Popen[bytes]) -> int:
    """SIGTERM by pid, then wait; SIGKILL only if it does not stop."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            return proc.wait(30)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(10)
            raise
    return proc.returncode


@pytest.fixture
def broker(installed: Installed) -> Iterator[str]:
    """The wheel's ``headrace broker`` on a free loopback port; stopped by pid after the test."""
    port = _free_port()
    proc, log = installed.start(
        "broker",
        "broker",
        "--data-dir",
        str(installed.home / "broker-data"),
        "--listen",
        f"127.0.0.1:{port}",
        "--group-initial-rebalance-delay-ms",
        "0",
    )
    try:
        _wait_listening(port, proc, log)
        yield f"127.0.0.1:{port}"
        assert _stop(proc) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            _stop(proc)


# headrace.examples.iot_sensors.SAMPLE, as the lines `headrace produce --key-separator "|"` reads.
READINGS = """\
s-1|{"sensor_id": "s-1", "celsius": 24.5, "humidity": 61}
s-2|{"sensor_id": "s-2", "celsius": 9.5, "humidity": 40}
s-3|{"sensor_id": "s-3", "celsius": 412.0, "humidity": 50}
s-1|{"sensor_id": "s-1", "celsius": "hot", "humidity": 50}
s-4|{"sensor_id": "s-4", "celsius": 20.0, "humidity": 30}
"""


def test_an_example_runs_as_a_service_from_the_wheel(installed: Installed, broker: str) -> None:
    """The example validates, enriches and alerts: s-3's 412 C is dropped as implausible,
    s-1's "hot" is dead-lettered, and only the cold store's 9.5 C is above its threshold."""
    servers = ("--bootstrap-servers", broker)
    for topic in ("sensor-readings", "sensor-enriched", "sensor-alerts", "sensor-readings-dlq"):
        _must(
            installed.run("headrace", "topics", "create", topic, "--partitions", "2", *servers),
            f"create {topic}",
        )
    app, log = installed.start(
        "iot",
        "run",
        "headrace.examples.iot_sensors:build_topology",
        "--application-id",
        "iot",
        *servers,
        "--state-dir",
        "./state",
        "--http-port",
        "0",
        "--status-interval",
        "0.5",
    )
    try:
        _wait_for("tasks=0_", app, log)
        _must(
            installed.run(
                "headrace",
                "produce",
                "sensor-readings",
                "--key-separator",
                "|",
                *servers,
                stdin=READINGS,
            ),
            "headrace produce",
        )

        def consume(topic: str, n: int) -> list[str]:
            result = installed.run(
                "headrace",
                "consume",
                topic,
                "--from-beginning",
                "--print-key",
                "--key-separator",
                "|",
                "--max-messages",
                str(n),
                "--timeout-ms",
                "30000",
                *servers,
            )
            _must(result, f"headrace consume {topic}")
            return sorted(result.stdout.splitlines())

        assert consume("sensor-enriched", 3) == [
            's-1|{"sensor_id":"s-1","site":"greenhouse","celsius":24.5,"fahrenheit":76.1,"humidity":61.0}',
            's-2|{"sensor_id":"s-2","site":"cold-store","celsius":9.5,"fahrenheit":49.1,"humidity":40.0}',
            's-4|{"sensor_id":"s-4","site":"unknown","celsius":20.0,"fahrenheit":68.0,"humidity":30.0}',
        ]
        assert consume("sensor-alerts", 1) == [
            's-2|{"sensor_id":"s-2","site":"cold-store","celsius":9.5,"fahrenheit":49.1,"humidity":40.0}',
        ]
        assert consume("sensor-readings-dlq", 1) == [
            's-1|{"sensor_id": "s-1", "celsius": "hot", "humidity": 50}'
        ]
    finally:
        code = _stop(app)
    assert code == 0, log.read_text()
    assert "iot stopped cleanly" in log.read_text()
    # --state-dir ./state is the user's own state/ folder: the task state went there.
    assert (installed.home / "state" / "iot").is_dir()


USER_TEST = '''\
"""A user's own test of their topology, run as a script."""

import headrace
from headrace import Serdes, StreamsBuilder
from headrace.testing import TopologyTestDriver


def word_counts():
    builder = StreamsBuilder()
    (
        builder.stream("lines", key_serde=Serdes.string(), value_serde=Serdes.string())
        .flat_map_values(lambda line: line.lower().split())
        .group_by(lambda _key, word: word, key_serde=Serdes.string(), value_serde=Serdes.string())
        .count()
        .to_stream()
        .to("word-counts", key_serde=Serdes.string(), value_serde=Serdes.long())
    )
    return builder.build()


def test_word_counts():
    with TopologyTestDriver(word_counts(), {"application_id": "words"}) as driver:
        lines = driver.create_input_topic("lines", Serdes.string(), Serdes.string())
        lines.pipe_input("a", "The cat")
        lines.pipe_input("b", "the dog")
        counts = driver.create_output_topic("word-counts", Serdes.string(), Serdes.long())
        got = counts.read_key_values_to_list()
    assert got == [("the", 1), ("cat", 1), ("the", 2), ("dog", 1)], got


if __name__ == "__main__":
    test_word_counts()
    print("word counts ok; headrace from", headrace.__file__)
'''


def test_a_users_topology_test_driver_test_runs_from_the_wheel(installed: Installed) -> None:
    (installed.home / "test_word_counts.py").write_text(USER_TEST)
    result = installed.run("python", "test_word_counts.py")
    _must(result, "the user's TopologyTestDriver test")
    assert (
        f"word counts ok; headrace from {installed.site_packages / 'headrace' / '__init__.py'}"
        in result.stdout
    )


def test_mypy_reads_the_installed_packages_types_through_py_typed(installed: Installed) -> None:
    """The wheel ships ``headrace/py.typed``, so a user's mypy reads the DSL's annotations
    from site-packages: the typed topology passes, and a wrong value type is reported."""
    assert (installed.site_packages / "headrace" / "py.typed").is_file()
    topology = (ROOT / "tests" / "dsl" / "typed_topology.py").read_text()
    broken = topology.replace("lambda n: n * 2)  # DOWNSTREAM", "lambda n: n.upper())")
    assert broken != topology
    # The second run reads what the first cached of site-packages (in the home directory's
    # .mypy_cache, new with the virtualenv) and checks only its own file: half the CPU.
    mypy = (sys.executable, "-m", "mypy", "--strict")
    for name, text, status in (("typed.py", topology, 0), ("broken.py", broken, 1)):
        (installed.home / name).write_text(text)
        result = subprocess.run(
            # this environment's mypy, told to resolve imports in the wheel's virtualenv
            [*mypy, "--python-executable", installed.bin("python"), name],
            cwd=installed.home,
            env=installed.env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        report = result.stdout + result.stderr
        assert result.returncode == status, f"{name}: {report}"
        if status:
            assert '"int" has no attribute "upper"' in report, report


def test_the_wheel_syncs_many_files_in_c(installed: Installed) -> None:
    """Built where a C compiler is, the wheel carries the broker's many-file fsync (an
    optional extension like the record walker)."""
    storage = installed.site_packages / "headrace" / "log_broker" / "storage"
    assert list(storage.glob("_csync.*.so"))
    result = installed.run(
        "python",
        "-c",
        "from headrace.log_broker.storage._fsyncs import compiled; print(compiled())",
    )
    _must(result, "compiled()")
    assert result.stdout.strip() == "True"

"""The reference Java client for conformance tests: kafka-clients from the jars of the
PyPI package shigawire-apache-flink-libraries, and a JDK from PATH. A test that needs
them fails (never skips) when they are missing."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path


def kafka_classpath() -> str:
    spec = importlib.util.find_spec("pyflink")  # a namespace package: no __file__
    assert spec is not None and spec.submodule_search_locations, (
        "the Java client tests need the jars of shigawire-apache-flink-libraries"
    )
    lib = Path(next(iter(spec.submodule_search_locations))) / "lib"
    assert (lib / "kafka-clients.jar").exists(), f"no kafka-clients.jar in {lib}"
    return f"{lib}/*"


def jdk_tool(name: str) -> str:
    found = shutil.which(name)
    assert found, f"the Java client tests need a JDK ({name} on PATH)"
    return found


def compile_java(source: Path, out_dir: Path) -> str:
    """Compile ``source`` against kafka-clients; returns the classpath to run it with."""
    classpath = kafka_classpath()
    done = subprocess.run(
        [jdk_tool("javac"), "-cp", classpath, "-d", str(out_dir), str(source)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return f"{out_dir}:{classpath}"

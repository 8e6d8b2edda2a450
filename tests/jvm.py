"""The JVM artifacts of jvm/pom.xml, for tests and benchmarks: a classpath per dependency
set, compiling a Java source against it, and running a class of it (Kafka's own tools).

`scripts/dev` resolves the poms once into ``.jvm/lib/<set>/`` (a set is a module of
jvm/pom.xml, resolved on its own, so each is a classpath of its own); nothing is
downloaded here. A test that needs the jars fails (never skips) when they are missing,
saying how to get them.

Benchmarks import this module as the tests do: with ``tests/`` on ``sys.path``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LIB = ROOT / ".jvm" / "lib"
POM = ROOT / "jvm" / "pom.xml"

KAFKA = "kafka"
"""Apache Kafka 4.4: the broker, its tools, the clients, Kafka Streams and its test-utils."""

QUIET_LOGGING = ("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",)
"""slf4j-simple's level for tools and apps: only what went wrong reaches stderr."""


def lib_dir(jar_set: str = KAFKA) -> Path:
    """The folder of one dependency set's jars; fails when the set-up has not made it."""
    folder = LIB / jar_set
    assert folder.is_dir() and any(folder.glob("*.jar")), (
        f"the JVM jars of set {jar_set!r} are missing from {folder}: run `scripts/dev test` "
        f"once (or `mvn -q -f {POM.relative_to(ROOT)} dependency:copy-dependencies`)"
    )
    return folder


def classpath(jar_set: str = KAFKA) -> str:
    """A Java classpath of every jar of one set (the JVM expands the ``*``)."""
    return f"{lib_dir(jar_set)}/*"


def jdk_tool(name: str) -> str:
    found = shutil.which(name)
    assert found, f"a JDK is needed ({name} on PATH): `scripts/dev test` installs one"
    return found


def compile_java(sources: Sequence[Path], out_dir: Path, jar_set: str = KAFKA) -> str:
    """Compile ``sources`` against one set's jars into ``out_dir``; returns the
    classpath to run the compiled classes with."""
    cp = classpath(jar_set)
    out_dir.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        [jdk_tool("javac"), "-nowarn", "-cp", cp, "-d", str(out_dir), *map(str, sources)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, f"javac failed:\n{done.stderr[-3000:]}"
    return f"{out_dir}{os.pathsep}{cp}"


def java_command(
    main_class: str,
    *args: str,
    cp: str | None = None,
    heap: str = "256m",
    jvm_options: Sequence[str] = QUIET_LOGGING,
) -> list[str]:
    """The command line running ``main_class`` on ``cp`` (Kafka's jars by default).

    Serial GC and the C1 compiler only: these JVMs live for seconds to minutes on a
    small shared machine, where start-up time and threads matter more than peak speed.
    """
    return [
        jdk_tool("java"),
        f"-Xmx{heap}",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        *jvm_options,
        "-cp",
        cp or classpath(),
        main_class,
        *args,
    ]


def run_java(
    main_class: str, *args: str, cp: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run ``main_class`` to its end; fails with its output when it exits non-zero."""
    done = subprocess.run(
        java_command(main_class, *args, cp=cp),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, (
        f"{main_class} {' '.join(args)} exited {done.returncode}:\n"
        f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    )
    return done


# Kafka's own command-line tools, as the bin/kafka-*.sh scripts of 4.4 run them.
TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand"
CONSUMER_GROUP_COMMAND = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
CONSOLE_PRODUCER = "org.apache.kafka.tools.ConsoleProducer"
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
METADATA_QUORUM_COMMAND = "org.apache.kafka.tools.MetadataQuorumCommand"
STORAGE_TOOL = "kafka.tools.StorageTool"
KAFKA_SERVER = "kafka.Kafka"


def kafka_tool(
    main_class: str, bootstrap: str, *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """One of Kafka's tools against ``bootstrap``, e.g.
    ``kafka_tool(TOPIC_COMMAND, bootstrap, "--list")``."""
    return run_java(main_class, "--bootstrap-server", bootstrap, *args, timeout=timeout)

"""The repository's Dockerfile and compose.yaml, checked without a container engine
(``container_files.py`` says what and why), and built and run where one answers.

A machine with no engine has no build test at all, rather than a skipped one that
would read as a pass: the checks below are what such a machine can tell.
"""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from container_files import (
    check_compose,
    check_dockerfile,
    created_topics,
    dockerignore,
    ignored,
    image_file,
    parse_headrace,
    user_topics,
)

from headrace import __version__
from headrace.streams._commands import load_target

ROOT = Path(__file__).resolve().parents[1]
IMAGE = f"headrace:{__version__}"


def test_the_dockerfile_builds_on_pinned_images_and_runs_the_broker() -> None:
    commands = check_dockerfile(ROOT / "Dockerfile")
    assert commands == [["headrace", "broker", "--config", "/etc/headrace/broker.properties"]]
    properties = image_file(ROOT / "Dockerfile", "/etc/headrace/broker.properties")
    assert properties == ROOT / "deploy" / "broker.properties"


def test_the_build_context_holds_what_the_wheel_is_built_from() -> None:
    """``pip wheel .`` in the image needs every package folder, the README (the
    project's long description) and setup.py (the C extensions); .dockerignore must
    leave none of them out, and must leave out what no image should hold."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    folders = set(project["tool"]["setuptools"]["package-dir"].values())
    needed = {*folders, "pyproject.toml", "setup.py", project["project"]["readme"]}
    patterns = dockerignore(ROOT)
    left_out = sorted(path for path in needed if ignored(path, patterns))
    assert not left_out, f".dockerignore leaves out {left_out}"
    for never in (".venv/bin/python", ".git/HEAD", "data/x", "log_broker/__pycache__/a.pyc"):
        assert ignored(never, patterns), never
    assert not ignored("examples/page_views.py", patterns)


def test_the_compose_file_wires_the_broker_registry_console_and_an_app() -> None:
    spec = check_compose(ROOT / "compose.yaml", ROOT / "Dockerfile", IMAGE)
    services = spec["services"]
    assert set(services) == {"broker", "topics", "page-views"}
    broker = parse_headrace(services["broker"]["command"])
    assert broker.schema_registry_listen == "0.0.0.0:8081"
    assert broker.console_listen == "0.0.0.0:8080"
    assert services["broker"]["build"] == "."
    # The topics created before the app starts are those its topology reads and writes.
    app = parse_headrace(services["page-views"]["command"])
    assert user_topics(load_target(app.target)()) == created_topics(services["topics"])


def test_the_checks_find_what_they_are_for(tmp_path: Path) -> None:
    """Each kind of mistake the checks exist for is caught: a misspelt flag, a port
    published beyond this machine or not listened on, an unpinned image, a bootstrap
    address the broker does not advertise."""
    text = (ROOT / "compose.yaml").read_text()
    shutil.copy(ROOT / "Dockerfile", tmp_path / "Dockerfile")
    (tmp_path / "deploy").mkdir()
    shutil.copy(ROOT / "deploy" / "broker.properties", tmp_path / "deploy")
    mistakes = {
        "--console-listen": ("- --console-listen\n", "- --consol-listen\n"),
        "beyond this machine": ('"127.0.0.1:8081:8081"', '"8081:8081"'),
        "never listens on": ('"127.0.0.1:8090:8090"', '"127.0.0.1:8091:8091"'),
        "not headrace:": (
            "image: headrace:0.1.0\n    depends_on:\n      broker",
            "image: headrace:latest\n    depends_on:\n      broker",
        ),
        "not an address broker advertises": (
            "HEADRACE_BOOTSTRAP_SERVERS: broker:29092\n    command",
            "HEADRACE_BOOTSTRAP_SERVERS: broker:9092\n    command",
        ),
        "is no headrace variable": ("HEADRACE_STATE_DIR", "HEADRACE_STATE_DIRECTORY"),
    }
    for expected, (right, wrong) in mistakes.items():
        assert right in text, right
        (tmp_path / "compose.yaml").write_text(text.replace(right, wrong, 1))
        with pytest.raises(AssertionError, match=expected):
            check_compose(tmp_path / "compose.yaml", tmp_path / "Dockerfile", IMAGE)
    dockerfile = (ROOT / "Dockerfile").read_text()
    for expected, (right, wrong) in {
        "latest": ("python:3.11.11-slim-bookworm AS", "python:latest AS"),
        "no tag": ("python:3.11.11-slim-bookworm\n", "python\n"),
        "no Dockerfile instruction": ("WORKDIR /data", "WORKDIRR /data"),
        "runs as root": ("USER headrace", "USER root"),
        "not in exec form": ('CMD ["headrace", "broker"', "CMD headrace broker #"),
        "not in the build context": ("COPY deploy/broker.properties", "COPY deploy/x.properties"),
    }.items():
        assert right in dockerfile, right
        (tmp_path / "Dockerfile").write_text(dockerfile.replace(right, wrong, 1))
        with pytest.raises(AssertionError, match=expected):
            check_dockerfile(tmp_path / "Dockerfile")


def _engine() -> str | None:
    """A container engine that answers (a client alone, with no daemon, is none)."""
    for name in ("docker", "podman"):
        if shutil.which(name) is None:
            continue
        done = subprocess.run([name, "info"], capture_output=True, timeout=30, check=False)
        if done.returncode == 0:
            return name
    return None


ENGINE = _engine()

if ENGINE is not None:

    def test_the_image_builds_and_its_broker_answers(tmp_path: Path) -> None:
        """Where an engine answers, the image is built and run: a failure here is the
        image's, reported as it is."""
        assert ENGINE is not None
        built = subprocess.run(
            [ENGINE, "build", "-t", IMAGE, str(ROOT)], capture_output=True, text=True, timeout=1800
        )
        assert built.returncode == 0, f"{ENGINE} build failed:\n{built.stderr[-4000:]}"
        name = f"headrace-test-{tmp_path.name}"
        run = subprocess.run(
            [ENGINE, "run", "-d", "--name", name, IMAGE],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert run.returncode == 0, run.stderr
        try:
            listed = subprocess.run(
                [ENGINE, "exec", name, "sh", "-c",
                 "for i in $(seq 60); do headrace topics list && exit 0; sleep 1; done; exit 1"],
                capture_output=True, text=True, timeout=120,
            )  # fmt: skip
            assert listed.returncode == 0, listed.stderr
        finally:
            subprocess.run([ENGINE, "rm", "-f", name], capture_output=True, timeout=60)

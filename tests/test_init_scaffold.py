"""``headrace init NAME``: the project it writes passes its own tests, runs as its README
says against the built-in broker, and its container files pass the same checks as the
repository's; a folder that holds anything is never written into."""

from __future__ import annotations

import glob
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from brokerproc import free_port
from container_files import check_compose, check_dockerfile, created_topics, user_topics
from doc_blocks import blocks, move_ports, run_bash, shell_env

from headrace import __version__
from headrace.streams._commands import load_target
from headrace.streams._dotenv import parse as parse_dotenv
from headrace.streams.runtime import AppSettings

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TEMPLATES = ROOT / "headrace" / "_scaffold"


def _init(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "headrace", "init", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("init")
    done = _init("shop-views", "--directory", str(where), cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert (
        done.stdout.strip()
        == f"created {where / 'shop-views'}/: cd {where / 'shop-views'} && pytest"
    )
    return where / "shop-views"


def test_the_project_has_its_files(project: Path) -> None:
    files = sorted(p.relative_to(project).as_posix() for p in project.rglob("*") if p.is_file())
    assert files == [
        ".dockerignore",
        ".env",
        ".gitignore",
        "Dockerfile",
        "README.md",
        "app.py",
        "compose.yaml",
        "pyproject.toml",
        "tests/test_app.py",
    ]
    text = "\n".join(p.read_text() for p in project.rglob("*") if p.is_file())
    assert "{{" not in text  # every placeholder was filled
    assert 'App("shop-views", build_topology)' in (project / "app.py").read_text()


def test_the_project_passes_its_own_tests(project: Path) -> None:
    """The README's test command, with the project's virtualenv's pytest, in the project."""
    (test_block,) = [b for b in blocks(project / "README.md", "sh") if b.strip() == "pytest"]
    done = run_bash(
        test_block.strip() + " -p no:cacheprovider", project, shell_env("-"), timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout, done.stdout


def test_the_project_is_clean_for_ruff(project: Path) -> None:
    for command in (["check"], ["format", "--check"]):
        done = subprocess.run(
            [str(BIN / "ruff"), *command, "."], cwd=project, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stdout + done.stderr


def test_the_settings_file_is_what_headrace_run_reads(project: Path) -> None:
    env = parse_dotenv((project / ".env").read_text(), ".env")
    settings = AppSettings.load(None, env, application_id="shop-views")
    assert settings.bootstrap_servers == "127.0.0.1:9092"
    assert settings.http_port == 8090
    assert str(settings.state_dir) == "state"


@pytest.mark.slow
def test_the_project_runs_as_its_readme_says(project: Path) -> None:
    """The README's run section, in order, against the built-in broker: the app is
    started by ``headrace run app.py:app`` with the settings of ``.env``, counts the
    views, answers a store query and stops cleanly. The default ports move to free ones
    (the environment wins over ``.env``, as it would for a user)."""
    run = next(b for b in blocks(project / "README.md", "sh") if "headrace run" in b)
    broker_port, http_port = free_port(), free_port()
    script = move_ports(run, {9092: broker_port, 8090: http_port})
    env = {**shell_env(f"127.0.0.1:{broker_port}"), "HEADRACE_HTTP_PORT": str(http_port)}
    done = run_bash(script, project, env, timeout=240)
    logs = "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in project.glob("*.log"))
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{logs}"
    out = done.stdout.splitlines()
    counts = [line for line in out if line.startswith("/home\t")]
    assert counts and counts[-1] == '/home\t{"page":"/home","views":2}', out
    assert out[-1].endswith('"value": 2}'), out
    assert "stopped cleanly" in (project / "app.log").read_text()


def test_its_container_files_pass_the_repository_checks(project: Path) -> None:
    (command,) = check_dockerfile(project / "Dockerfile", needs_user=False)
    assert command[:3] == ["headrace", "run", "app.py:app"]
    spec = check_compose(project / "compose.yaml", ROOT / "Dockerfile", f"headrace:{__version__}")
    assert set(spec["services"]) == {"broker", "topics", "app"}
    # The topics created before the app starts are those its topology reads and writes.
    app = load_target(str(project / "app.py") + ":build_topology")()
    assert (
        user_topics(app)
        == created_topics(spec["services"]["topics"])
        == {
            "page-views",
            "views-per-page",
        }
    )
    # The image it builds on is the one the repository's Dockerfile and compose.yaml make.
    repository = check_compose(
        ROOT / "compose.yaml", ROOT / "Dockerfile", f"headrace:{__version__}"
    )
    assert repository["services"]["broker"]["image"] == f"headrace:{__version__}"


def test_a_folder_that_holds_anything_is_never_written_into(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    done = _init("mine", cwd=tmp_path)
    assert done.returncode == 2
    assert (
        done.stderr == "headrace init: error: mine exists and is not empty: nothing was written\n"
    )
    assert [p.name for p in (tmp_path / "mine").iterdir()] == ["notes.txt"]
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    (tmp_path / "file").write_text("")
    assert _init("file", cwd=tmp_path).returncode == 2
    (tmp_path / "empty").mkdir()  # an empty folder is fine: nothing in it to lose
    assert _init("empty", cwd=tmp_path).returncode == 0
    assert (tmp_path / "empty" / "app.py").exists()


def test_a_name_kafka_cannot_use_is_refused(tmp_path: Path) -> None:
    done = _init("my app", cwd=tmp_path)
    assert done.returncode == 2
    assert "cannot name an application" in done.stderr
    assert not any(tmp_path.iterdir())


def test_a_wheel_carries_every_template() -> None:
    """Each template file is matched by the package data setuptools puts in a wheel
    (globbed as setuptools globs it, recursively, from the package's folder)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = project["tool"]["setuptools"]["package-data"]["headrace"]
    shipped = {
        path
        for pattern in patterns
        for path in glob.glob(pattern, root_dir=ROOT / "headrace", recursive=True)
    }
    templates = [p.relative_to(ROOT / "headrace").as_posix() for p in TEMPLATES.rglob("*.tmpl")]
    assert len(templates) == 9
    missing = sorted(set(templates) - shipped)
    assert not missing, f"pyproject.toml's package-data leaves out {missing}"

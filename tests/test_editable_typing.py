"""An editable install (``pip install -e .``, the README's set-up) type-checks a user's code.

setuptools serves pyproject.toml's ``package-dir`` mapping (``headrace.dsl`` is ``dsl/``)
in an editable install through an import hook, which mypy and editors do not run; so the
editable wheel also names a tree of links in the installed shape (scripts/editable_tree.py).

One module-scoped fixture installs a copy of the working tree, editable, in a fresh
virtualenv, offline: this environment's pip installs it (``--python``), without
dependencies or build isolation, and the build runs this environment's setuptools (the
virtualenv reaches it through a ``.pth`` naming a folder of links to it). A copy, because
an editable build writes into the project (its link tree, its C extensions, left out here
with ``CC=false``: they are optional) and a test below edits the sources. This
environment's mypy then checks a user's file in a directory outside the copy, told to
resolve imports in the virtualenv, as an editor's checker is.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]

# What an editable install needs of the project, besides the package folders.
BUILD_FILES = ("pyproject.toml", "setup.py", "README.md", "scripts/editable_tree.py")


@dataclass(frozen=True)
class Editable:
    """The copy installed editable in ``venv``, and a user's directory outside both."""

    src: Path
    venv: Path
    home: Path
    cache: Path

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")

    def env(self) -> dict[str, str]:
        """The caller's environment without anything that points into the checkout."""
        return {
            k: v
            for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "VIRTUAL_ENV", "MYPYPATH")
        }

    def mypy(self, source: str, name: str = "app.py") -> str:
        """``mypy --strict`` on the user's file ``name`` holding ``source``: its report."""
        (self.home / name).write_text(source)
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "mypy",
                "--strict",
                "--cache-dir",
                str(self.cache),
                "--python-executable",
                self.python,
                name,
            ],
            cwd=self.home,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode in (0, 1), result.stdout + result.stderr  # 2: mypy crashed
        return result.stdout + result.stderr


def _must(result: subprocess.CompletedProcess[str], what: str) -> None:
    """Fail (never skip) with the command's own output when ``what`` did not work."""
    assert result.returncode == 0, (
        f"{what} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    )


def _copy_project(dest: Path) -> None:
    """The build files and every package folder of pyproject.toml's ``package-dir``."""
    for rel in BUILD_FILES:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, dest / rel)
    package_dirs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-dir"
    ]
    skip = shutil.ignore_patterns("__pycache__", "*.so", ".mypy_cache")
    for folder in set(package_dirs.values()):
        shutil.copytree(ROOT / folder, dest / folder, ignore=skip)


def _site_packages() -> Path:
    """This environment's site-packages (where its setuptools is)."""
    spec = importlib.util.find_spec("setuptools")
    assert spec is not None and spec.origin is not None, "this environment has no setuptools"
    return Path(spec.origin).resolve().parents[1]


def _link_build_tools(dest: Path) -> None:
    """A folder of links to this environment's setuptools, its metadata (which registers
    its commands) and its distutils shim: what a build without isolation imports."""
    site = _site_packages()
    dest.mkdir()
    for name in ("setuptools", "_distutils_hack", *(p.name for p in site.glob("setuptools-*"))):
        (dest / name).symlink_to(site / name)


@pytest.fixture(scope="module")
def editable(tmp_path_factory: pytest.TempPathFactory) -> Editable:
    work = tmp_path_factory.mktemp("editable")
    src, venv, home, tools = work / "src", work / "venv", work / "home", work / "tools"
    _copy_project(src)
    home.mkdir()
    _must(
        subprocess.run(
            [sys.executable, "-m", "venv", "--without-pip", str(venv)],
            capture_output=True,
            text=True,
            timeout=120,
        ),
        "python -m venv",
    )
    (site,) = venv.glob("lib/python3*/site-packages")
    _link_build_tools(tools)
    (site / "build_tools.pth").write_text(f"{tools}\n")
    # the shim's own .pth, which makes setuptools' distutils the one imported
    shutil.copy2(_site_packages() / "distutils-precedence.pth", site)
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-e",
            str(src),
        ],
        cwd=work,
        env={**os.environ, "CC": "false"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    _must(install, "pip install -e")
    # headrace's own dependencies, from this environment, for the user's program to run:
    # only now, so that pip above saw a virtualenv holding nothing of the project's.
    (site / "dependencies.pth").write_text(f"{_site_packages()}\n")
    return Editable(src, venv, home, work / "mypy-cache")


USER_APP = """\
import asyncio

from headrace import App, Serdes, StreamsBuilder


async def double(n: int) -> int:
    await asyncio.sleep(0)
    return n * 2


async def positive(key: str, n: int) -> bool:
    return n > 0


builder = StreamsBuilder()
numbers = builder.stream("numbers", key_serde=Serdes.string(), value_serde=Serdes.long())
reveal_type(numbers)
numbers.map_values_async(double, concurrency=4, order="partition").to("doubled")
app = App("doubler", builder.build(), bootstrap_servers="127.0.0.1:9092", linger_ms=10)
reveal_type(app)
mistaken: int = app.settings.application_id  # WRONG-TYPE
App("doubler", builder.build(), bootstrap_server="127.0.0.1:9092")  # MISSPELT-APP
numbers.filter_async(positive, concurency=4)  # MISSPELT-ASYNC
"""

# What mypy must say on the user's lines marked so, and nowhere else.
EXPECTED_ERRORS = {
    "WRONG-TYPE": "Incompatible types in assignment",
    "MISSPELT-APP": 'Unexpected keyword argument "bootstrap_server" for "App"',
    "MISSPELT-ASYNC": 'Unexpected keyword argument "concurency" for "filter_async"',
}


@pytest.fixture(scope="module")
def report(editable: Editable) -> str:
    return editable.mypy(USER_APP)


def _errors(report: str) -> dict[int, str]:
    """mypy's errors in app.py, by line number."""
    errors = {}
    for line in report.splitlines():
        where, _, message = line.partition(": error: ")
        if message:
            errors[int(where.removeprefix("app.py:"))] = message
    return errors


def _line_of(mark: str) -> int:
    (number,) = (n for n, x in enumerate(USER_APP.splitlines(), 1) if x.endswith(f"# {mark}"))
    return number


def test_mypy_finds_headrace_in_the_editable_install(report: str) -> None:
    assert "Cannot find implementation or library stub" not in report, report
    assert 'Revealed type is "headrace.streams.runtime._app.App"' in report, report
    assert 'Revealed type is "headrace.dsl._kstream.KStream[str, int]"' in report, report


def test_a_type_error_in_the_users_file_is_reported(report: str) -> None:
    """The check is real: a wrong type in the user's file is an error."""
    errors = _errors(report)
    assert EXPECTED_ERRORS["WRONG-TYPE"] in errors.get(_line_of("WRONG-TYPE"), ""), report


def test_a_misspelt_keyword_of_app_or_of_an_async_operator_is_reported(report: str) -> None:
    """App's settings and the async operators' options are keyword parameters, so a
    misspelt one is an error where it is written (with ``**options`` it was not), and
    the marked lines are the only errors."""
    errors = _errors(report)
    for mark in ("MISSPELT-APP", "MISSPELT-ASYNC"):
        assert EXPECTED_ERRORS[mark] in errors.get(_line_of(mark), ""), report
    assert set(errors) == {_line_of(mark) for mark in EXPECTED_ERRORS}, report


def test_an_edit_and_a_new_module_are_seen_without_reinstalling(editable: Editable) -> None:
    """The tree links to the sources: an edited module, and a module new in a sub-package's
    folder, are read by mypy and imported by Python as they are now; a module new in
    ``headrace/`` itself is imported through setuptools' hook behind the tree."""
    with (editable.src / "headrace" / "__init__.py").open("a") as init:
        init.write('\nEDITED = "seen without reinstalling"\n')
    (editable.src / "dsl" / "_added.py").write_text("def added() -> int:\n    return 41\n")
    (editable.src / "headrace" / "_added_top.py").write_text("TOP = 1\n")
    report = editable.mypy(
        "import headrace\n"
        "from headrace.dsl._added import added\n"
        "reveal_type(headrace.EDITED)\n"
        "reveal_type(added())\n",
        "edited.py",
    )
    assert 'Revealed type is "str"' in report, report
    assert 'Revealed type is "int"' in report, report
    assert ": error:" not in report, report
    ran = subprocess.run(
        [
            editable.python,
            "-c",
            "import headrace, headrace.dsl._added, headrace._added_top\n"
            "print(headrace.__file__)\n"
            "print(headrace.EDITED, headrace.dsl._added.added() + headrace._added_top.TOP)\n",
        ],
        cwd=editable.home,
        env=editable.env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    _must(ran, "the user's program")
    where, said = ran.stdout.splitlines()
    # Python imports through the tree too, so it runs what the type checker read
    assert where == str(editable.src / "build" / "editable-tree" / "headrace" / "__init__.py")
    assert said == "seen without reinstalling 42"


def test_a_module_new_in_headrace_itself_is_seen_once_the_tree_is_laid_out_again(
    editable: Editable,
) -> None:
    """``headrace/`` is a folder of links, one per entry: a module new there reaches type
    checkers when ``scripts/editable_tree.py`` (which ``scripts/dev`` runs) or the next
    install lays the tree out again, and a deleted one's link goes."""
    later = editable.src / "headrace" / "_later.py"
    later.write_text("LATER = 1\n")
    user = "from headrace._later import LATER\nreveal_type(LATER)\n"
    assert "Cannot find implementation" in editable.mypy(user, "later.py")
    lay_out = [sys.executable, str(editable.src / "scripts" / "editable_tree.py")]
    _must(subprocess.run(lay_out, capture_output=True, text=True, timeout=60), "laying out")
    report = editable.mypy(user, "later.py")
    assert 'Revealed type is "int"' in report and ": error:" not in report, report
    link = editable.src / "build" / "editable-tree" / "headrace" / "_later.py"
    assert link.is_symlink()
    later.unlink()
    _must(subprocess.run(lay_out, capture_output=True, text=True, timeout=60), "laying out")
    assert not link.is_symlink()

"""``headrace init NAME``: a new application's project, ready to test, run and deploy.

It writes ``NAME/`` (under ``--directory``, default the current one) from the templates
in ``_scaffold/project/``: the app (a topology and the ``App`` running it), its test on
the ``TopologyTestDriver``, a ``.env`` of the settings ``headrace run`` reads, a
Dockerfile built on the headrace image of this version, a compose file running the app
beside the built-in broker with its schema registry and console, and a README.

A template's path is the file's, with ``.tmpl`` dropped and a leading ``dot-`` made a
dot (package data leaves dotfiles out); ``{{project}}``, ``{{application_id}}`` and
``{{version}}`` in it are replaced. A directory that exists and holds anything is never
written into: nothing of the user's is overwritten.
"""

from __future__ import annotations

import argparse
import re
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from headrace import __version__

# A project's name is also its application id, a Kafka group id and a topic prefix:
# letters, digits, '.', '_' and '-' are what Kafka allows in a topic name.
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,99}")


class InitError(Exception):
    exit_status = 2  # a usage error, as argparse reports one


def register(subparsers: Any, broker_options: argparse.ArgumentParser) -> None:
    init = subparsers.add_parser(
        "init",
        help="create a new application's project: app, test, settings, Dockerfile, compose",
        description="Create NAME/: an app (a topology and the App running it), its test on"
        " the TopologyTestDriver, a .env of its settings, a Dockerfile and a compose.yaml"
        " running it beside the built-in broker, its schema registry and console. Then:"
        " cd NAME && pytest.",
    )
    init.add_argument("name", metavar="NAME", help="the project's folder and application id")
    init.add_argument(
        "--directory",
        default=".",
        metavar="DIR",
        help="where NAME/ is created (default: the current directory)",
    )
    init.set_defaults(handler=_init)


def _init(args: argparse.Namespace) -> int:
    target = create_project(args.name, Path(args.directory))
    print(f"created {target}/: cd {target} && pytest")
    return 0


def create_project(name: str, directory: Path) -> Path:
    """Write the project ``name`` into ``directory / name``; return that path."""
    if not _NAME.fullmatch(name):
        raise InitError(
            f"{name!r} cannot name an application: use letters, digits, '.', '_' and '-',"
            " starting with a letter"
        )
    target = directory / name
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise InitError(f"{target} exists and is not empty: nothing was written")
    values = {"project": name, "application_id": name, "version": __version__}
    templates = resources.files("headrace") / "_scaffold" / "project"
    for relative, template in _templates(templates):
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_render(template.read_text(encoding="utf-8"), values), encoding="utf-8")
    return target


def _templates(folder: Traversable, prefix: Path = Path()) -> list[tuple[Path, Traversable]]:
    """Each template under ``folder`` with the path its file gets in the project."""
    found: list[tuple[Path, Traversable]] = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.is_dir():
            found += _templates(entry, prefix / entry.name)
        elif entry.name.endswith(".tmpl"):
            name = entry.name.removesuffix(".tmpl")
            found.append((prefix / ("." + name[4:] if name.startswith("dot-") else name), entry))
    return found


def _render(text: str, values: dict[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        return values[match[1]]  # a KeyError is a template's typo, caught by the tests

    return re.sub(r"\{\{(\w+)\}\}", value, text)

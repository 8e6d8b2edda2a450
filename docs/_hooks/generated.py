"""What the documentation build generates from the code, so it cannot drift from it.

The API reference reads the package's source as installed: ``headrace.dsl`` lives in the
repository's ``dsl/`` folder, and so on (pyproject.toml's ``package-dir``). Before the
build, :func:`on_config` lays out ``.api-tree/`` with symbolic links in the installed
shape, where mkdocstrings reads it.


A page asks for generated text with a marker line:

- ``<!-- generated: cli -->``: every ``headrace`` command's ``--help``, from the parser
  the command itself builds (``headrace.cli.build_parser``);
- ``<!-- generated: settings -->``: the App's settings, their ``HEADRACE_*`` variables,
  types and defaults, from ``AppSettings``'s fields.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority

MARKER = "<!-- generated: {} -->"
ROOT = Path(__file__).resolve().parents[2]
API_TREE = ROOT / ".api-tree"


@event_priority(100)  # before mkdocstrings reads its paths (hooks run after plugins otherwise)
def on_config(config: Any, **_: Any) -> Any:
    lay_out_api_tree()
    return config


def lay_out_api_tree() -> None:
    """``.api-tree/headrace/...``: the package as installed (``scripts/installed_tree.py``)."""
    spec = importlib.util.spec_from_file_location(
        "installed_tree", ROOT / "scripts" / "installed_tree.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.lay_out(ROOT, API_TREE)


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    for name, render in (("cli", cli_reference), ("settings", settings_reference)):
        marker = MARKER.format(name)
        if marker in markdown:
            markdown = markdown.replace(marker, render())
    return markdown


def cli_reference() -> str:
    from headrace.cli import build_parser

    # argparse wraps help to the terminal's width; a fixed one keeps the page stable.
    os.environ["COLUMNS"] = "88"
    sections = []
    for path, parser in _commands(build_parser(), ["headrace"]):
        depth = "#" * min(len(path) + 1, 4)
        sections.append(
            f"{depth} `{' '.join(path)}`\n\n```text\n{parser.format_help().rstrip()}\n```\n"
        )
    return "\n".join(sections)


def _commands(
    parser: argparse.ArgumentParser, path: list[str]
) -> Iterator[tuple[list[str], argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:  # argparse keeps subcommands only here
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, [*path, name])


def settings_reference() -> str:
    from headrace.streams.runtime._settings import ENV_PREFIX, AppSettings

    rows = ["| setting | variable | type | default |", "|---|---|---|---|"]
    for name, field in AppSettings.model_fields.items():
        default = "required" if field.is_required() else f"`{_default(field.default)}`"
        kind = _type_name(field.annotation).replace(" | ", " or ")
        rows.append(f"| `{name}` | `{ENV_PREFIX}{name.upper()}` | `{kind}` | {default} |")
    return "\n".join(rows)


def _default(value: Any) -> str:
    return repr(str(value)) if isinstance(value, Path) else repr(value)


def _type_name(annotation: Any) -> str:
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "").replace("pathlib.", "")

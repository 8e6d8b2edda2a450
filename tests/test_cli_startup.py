"""The client commands, ``--help`` and ``--version`` start without importing the broker,
the stream runtime or aiokafka (headrace.cli registers only the command that runs), and
the commands registered by name alone read as when every package registers them."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from headrace import cli

# What only the broker, the application side or a command's handler needs.
HEAVY = (
    "aiokafka",
    "aiohttp",
    "hypothesis",
    "headrace.log_broker",
    "headrace.streams",
    "headrace.dsl",
    "headrace.state",
    "headrace.console",
    "headrace.spark_bridge",
    "headrace.schema_registry._server",
)

CLIENT_COMMANDS = ("topics", "produce", "consume", "groups", "configs", "records", "users", "acls")


def _subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction:  # type: ignore[type-arg]
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def test_the_command_table_matches_what_the_packages_register() -> None:
    registered = _subcommands(cli.build_parser())
    listed = [(a.dest, a.help) for a in registered._choices_actions]
    assert listed == [(name, help_line) for name, (help_line, _) in cli.COMMANDS.items()]


@pytest.mark.parametrize("command", list(cli.COMMANDS))
def test_each_command_parses_as_when_every_package_registers(command: str) -> None:
    full = _subcommands(cli.build_parser()).choices[command]
    alone = _subcommands(cli.parser_for([command])).choices[command]
    assert alone.format_help() == full.format_help()  # a name-only stub has no options


_IMPORTS_AFTER = """
import sys
from headrace.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print("\\n".join(sorted(sys.modules)))
"""


@pytest.mark.parametrize(
    "argv",
    [
        ["--version"],
        ["--help"],
        *([c, "--help"] for c in CLIENT_COMMANDS),
        ["groups", "list", "--help"],
        ["schemas", "list", "--help"],
    ],
    ids=" ".join,
)
def test_client_commands_import_nothing_heavy(argv: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTS_AFTER, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    imported = done.stdout.split("\n")
    assert "headrace.cli" in imported
    heavy = [m for m in imported if any(m == h or m.startswith(h + ".") for h in HEAVY)]
    assert not heavy, heavy

"""`headrace broker` starts without the modules it never uses (headrace._broker_start)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from headrace._broker_start import BROKER_COMMAND_MODULES
from headrace.cli import build_parser

_PROBE = """
import json, sys
from headrace.cli import main
try:
    main(["broker", "--help"])
except SystemExit:
    pass
loaded = {name: name in sys.modules for name in ("hypothesis", "headrace.streams", "kio.static")}
import hypothesis.strategies  # still importable afterwards
print(json.dumps(loaded))
"""


def test_broker_command_imports_neither_hypothesis_nor_the_stream_runtime() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=60, check=True
    )
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    assert loaded == {"hypothesis": False, "headrace.streams": False, "kio.static": True}


def _exit_status(parser: argparse.ArgumentParser, argv: list[str]) -> object:
    with pytest.raises(SystemExit) as exited:
        parser.parse_args(argv)
    return exited.value.code


def test_only_the_broker_parser_leaves_the_other_commands_out() -> None:
    assert _exit_status(build_parser(), ["run", "--help"]) == 0
    assert _exit_status(build_parser(BROKER_COMMAND_MODULES), ["run", "--help"]) == 2
    assert _exit_status(build_parser(BROKER_COMMAND_MODULES), ["broker", "--help"]) == 0

"""The `headrace` command.

Each package owns its subcommands and exposes ``register(subparsers, broker_options)``;
this module only joins them. A module may also expose ``prepare()``, run before any
module registers: for what must exist when others build their parsers. ``broker_options`` is an argparse parent parser carrying
``--bootstrap-servers`` so every command that talks to a broker spells it the same way.

A command imports only the packages that register it (``COMMANDS``): the others'
packages bring in the broker, the stream runtime, aiohttp and aiokafka, which cost about a
second of start-up that ``headrace topics list`` or ``--version`` never uses. The other
commands are still registered, by name and help only, so ``--help`` and a mistyped
command read as when every package registers.

A command handler returns an exit code: 0 ok, 1 error, 2 usage. An error is printed as
one line, never as a traceback; its ``exit_status`` attribute, if any, is the exit code.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections.abc import Callable, Sequence
from importlib import import_module
from types import ModuleType
from typing import Any

from headrace import __version__
from headrace._broker_start import BROKER_COMMAND_MODULES, import_kio_without_hypothesis

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"

# Packages that contribute subcommands, in the order they appear in --help.
COMMAND_MODULES = (
    "headrace._init_command",
    "headrace.log_broker._commands",
    "headrace.client_tools._commands",
    "headrace.streams._commands",
    "headrace.spark_bridge._commands",
    "headrace.schema_registry._commands",
    "headrace.schema_registry._cli",
    "headrace.console._commands",
    "headrace._demo",
    "headrace._beside_broker",  # adds to `broker`, registered above
    "headrace._value_formats",  # adds the schema registry's formats to `produce` and `consume`
    "headrace._completion",
)

_CLIENT_TOOLS = ("headrace.client_tools._commands", "headrace._value_formats")

# Each command, in --help's order: its help line and the modules that register it or add
# to it (a subset of COMMAND_MODULES). tests/test_cli_startup.py checks both against what
# the modules register.
COMMANDS: dict[str, tuple[str, tuple[str, ...]]] = {
    "init": (
        "create a new application's project: app, test, settings, Dockerfile, compose",
        ("headrace._init_command",),
    ),
    "broker": ("run the built-in Kafka-protocol broker", BROKER_COMMAND_MODULES),
    "topics": ("create, list, describe, alter, delete topics", _CLIENT_TOOLS),
    "produce": ("send lines of stdin or a file as records", _CLIENT_TOOLS),
    "consume": ("print records of a topic", _CLIENT_TOOLS),
    "groups": ("list, describe, reset and delete groups", _CLIENT_TOOLS),
    "configs": ("describe and alter topic or broker configs", _CLIENT_TOOLS),
    "records": ("delete records up to an offset", _CLIENT_TOOLS),
    "users": ("SCRAM users of the broker (add, list, delete)", _CLIENT_TOOLS),
    "acls": ("access control lists (add, list, remove)", _CLIENT_TOOLS),
    "run": (
        "run a stream processing application as a service",
        ("headrace.streams._commands",),
    ),
    "describe": (
        "print the sub-topologies, sources, stores and sinks of a topology",
        ("headrace.streams._commands",),
    ),
    "spark": ("hand topics over to Delta Lake and Spark SQL", ("headrace.spark_bridge._commands",)),
    "schema-registry": (
        "run a Confluent-compatible schema registry stored in the _schemas topic",
        ("headrace.schema_registry._commands",),
    ),
    "schemas": (
        "list, get, register, check and delete schemas of a schema registry",
        ("headrace.schema_registry._cli",),
    ),
    "console": ("a web console of a cluster and its applications", ("headrace.console._commands",)),
    "demo": ("run the main job on the embedded broker", ("headrace._demo",)),
    "completion": ("print a shell completion script", ("headrace._completion",)),
}


def _broker_options() -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "--bootstrap-servers",
        default=os.environ.get("HEADRACE_BOOTSTRAP_SERVERS", DEFAULT_BOOTSTRAP),
        metavar="HOST:PORT[,...]",
        help="broker(s) to talk to (default: $HEADRACE_BOOTSTRAP_SERVERS or %(default)s)",
    )
    parent.add_argument(
        "--command-config",
        metavar="FILE",
        help="Kafka client properties: security.protocol, sasl.*, ssl.* (as Kafka's tools)",
    )
    return parent


def build_parser(
    modules: Sequence[str] = COMMAND_MODULES, *, stubs: Sequence[str] = ()
) -> argparse.ArgumentParser:
    """The parser ``modules`` register; each command in ``stubs`` is added after them by
    its name and help only, for a parser that must list every command but runs one."""
    parser = argparse.ArgumentParser(
        prog="headrace",
        description="Stream processing in the Kafka Streams mould, with a built-in broker.",
    )
    parser.add_argument("--version", action="version", version=f"headrace {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    broker_options = _broker_options()
    loaded = [m for m in map(_command_module, modules) if m is not None]
    for module in loaded:
        if hasattr(module, "prepare"):
            module.prepare()
    for module in loaded:
        module.register(subparsers, broker_options)
    for name in stubs:
        if name not in subparsers.choices:
            subparsers.add_parser(name, help=COMMANDS[name][0])
    return parser


def parser_for(argv: Sequence[str]) -> argparse.ArgumentParser:
    """The parser for ``argv``: the command it names registered in full, the others by
    name and help only (module docstring)."""
    command = next((word for word in argv if not word.startswith("-")), None)
    if command == "broker":  # a quick start after a crash (headrace._broker_start)
        import_kio_without_hypothesis()
        return build_parser(BROKER_COMMAND_MODULES)
    homes: tuple[str, ...] = COMMANDS[command][1] if command in COMMANDS else ()
    if homes == _CLIENT_TOOLS:
        import_kio_without_hypothesis()  # the client tools' error codes come from kio
    modules = [m for m in COMMAND_MODULES if m in homes]
    return build_parser(modules, stubs=list(COMMANDS))


def _command_module(name: str) -> ModuleType | None:
    try:
        return import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and name.startswith(exc.name):
            return None  # that package has no commands yet
        raise


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if "_ARGCOMPLETE" in os.environ:  # a zsh or fish completion script asks
        from headrace._completion import complete

        complete(parser_for)  # answers and exits
    args = _parse(parser_for(argv), argv)
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # one clear line for the user, not a traceback
        if os.environ.get("HEADRACE_DEBUG"):
            raise
        message = str(exc) or type(exc).__name__
        print(f"headrace {args.command}: error: {message}", file=sys.stderr)
        return int(getattr(exc, "exit_status", 1))  # 2 for a usage error, as argparse


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """``parser.parse_args``, except that an unknown flag is refused by the subcommand it
    was given to (its usage, not the top-level one) with the nearest flag it has:
    argparse leaves unknown arguments to the top-level parser, which knows no flags."""
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        command = _chosen_parser(parser, args)
        flags = [f for action in command._actions for f in action.option_strings]
        hints = []
        for word in unknown:
            if word.startswith("-"):
                near = difflib.get_close_matches(word.partition("=")[0], flags, n=1)
                hints += [f"did you mean {near[0]}?"] if near else []
        command.error("; ".join([f"unrecognized arguments: {' '.join(unknown)}", *hints]))
    return args


def _chosen_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Any:
    """The parser of the (sub)subcommand ``args`` was parsed by: ``topics create``'s for
    ``headrace topics create ...``."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            chosen = action.choices.get(str(getattr(args, action.dest, "")))
            if chosen is not None:
                return _chosen_parser(chosen, args)
    return parser


if __name__ == "__main__":
    sys.exit(main())

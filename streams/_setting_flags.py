"""``headrace run``'s setting flags, one per field of ``AppSettings``, made from the model.

A setting is named once, as a field of ``AppSettings``: its ``HEADRACE_<FIELD>`` variable
(``AppSettings.load``) and its ``--field-name`` flag here both come from that field, so a
new setting reaches the command line and the environment without being written out again.
A field's type gives the flag's value (numbers, words, a path; a choice of fixed words is
checked by the settings, which read it in any case), and ``FLAGS`` keeps the help of the
flags that say more than their variable and default.

Passwords are not flags: a process's arguments are visible to every user of the machine.
They come from the environment, a ``.env`` file, a settings file or ``--command-config``.
"""

from __future__ import annotations

import argparse
import pathlib
import types
import typing
from typing import Any, Literal

import pydantic

from .runtime._settings import ENV_PREFIX, AppSettings

NOT_FLAGS = frozenset({"sasl_password", "ssl_password"})

# What a flag says beyond "$HEADRACE_X (default ...)", and argparse options of its own.
FLAGS: dict[str, dict[str, Any]] = {
    "application_id": {"help": "application id (needed for targets that are not an App)"},
    "bootstrap_servers": {
        "metavar": "HOST:PORT[,...]",
        "help": "broker(s) to talk to (default: see below)",
    },
    "state_dir": {"help": "where task state lives"},
    "http_port": {"help": "serve /health, /metrics, /stores on this port (0: any)"},
    "http_host": {"help": "address the HTTP server binds (default 127.0.0.1)"},
    "commit_interval_ms": {
        "metavar": "N",
        "help": "default 1000, or 100 under exactly_once_v2 ($HEADRACE_COMMIT_INTERVAL_MS)",
    },
    "startup_timeout_ms": {
        "help": "how long start-up waits for a cluster that is not ready (default 60000)"
    },
    "num_standby_replicas": {
        "help": "warm copies of each stateful task kept on other instances (default 0)"
    },
    "processing_guarantee": {
        "choices": ("at_least_once", "exactly_once_v2"),
        "help": "default at_least_once (see the README on choosing)",
    },
    "log_format": {"metavar": "{text,json}", "help": "default text"},
    "log_level": {"metavar": "{debug,info,warning,error}", "help": "in any case (default info)"},
    "topic_configs": {
        "flag": "--topic-config",
        "metavar": "KEY=VALUE",
        "help": "a config of the internal topics (Kafka Streams' topic.* configs); repeatable",
    },
}


def setting_flags() -> list[str]:
    """The fields of ``AppSettings`` that are flags, in the model's order."""
    return [name for name in AppSettings.model_fields if name not in NOT_FLAGS]


def add_setting_flags(parser: argparse.ArgumentParser) -> None:
    """One flag per setting (``setting_flags``); each is ``None`` when not given."""
    for name in setting_flags():
        options = _options_for(name, AppSettings.model_fields[name])
        options.update({k: v for k, v in FLAGS.get(name, {}).items() if k != "flag"})
        flag = FLAGS.get(name, {}).get("flag", "--" + name.replace("_", "-"))
        parser.add_argument(flag, dest=name, default=None, **options)


def given_settings(args: argparse.Namespace) -> dict[str, Any]:
    """The settings the flags give; ``None`` where a flag was not given."""
    given = {name: getattr(args, name) for name in setting_flags()}
    pairs = given["topic_configs"]
    given["topic_configs"] = dict(pairs) if pairs else None
    return given


def _options_for(name: str, field: pydantic.fields.FieldInfo) -> dict[str, Any]:
    kind = _without_none(field.annotation)
    default = field.get_default(call_default_factory=True)
    shown = "unset" if default is None else default
    help_text = f"${ENV_PREFIX}{name.upper()} (default {shown})"
    if kind is bool:
        return {"action": argparse.BooleanOptionalAction, "help": help_text}
    if kind is int:
        return {"type": int, "metavar": "N", "help": help_text}
    if typing.get_origin(kind) is Literal:
        words = ",".join(str(word) for word in typing.get_args(kind))
        return {"metavar": "{" + words + "}", "help": help_text}
    if kind is pathlib.Path:
        return {"metavar": "PATH", "help": help_text}
    if typing.get_origin(kind) is dict:
        return {"action": "append", "type": _pair, "help": help_text}
    return {"help": help_text}


def _without_none(annotation: Any) -> Any:
    """``int`` for ``int | None``; the annotation itself otherwise."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        rest = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return annotation


def _pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"KEY=VALUE, not {text!r}")
    return key, value

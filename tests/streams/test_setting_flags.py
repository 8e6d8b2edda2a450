"""A setting is named once, as a field of AppSettings: ``headrace run`` has a flag for it
and ``HEADRACE_<FIELD>`` sets it, each giving the same value, with no list written out
again anywhere (streams/_setting_flags.py)."""

from __future__ import annotations

import argparse
import pathlib
import typing
from typing import Any, Literal

import pytest

from headrace.streams._commands import register
from headrace.streams._setting_flags import NOT_FLAGS, _without_none, given_settings
from headrace.streams.runtime import AppSettings


def _run_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="headrace")
    register(parser.add_subparsers(dest="command"), argparse.ArgumentParser(add_help=False))
    return parser


def _sample(name: str) -> tuple[list[str], str, Any]:
    """A value for setting ``name`` other than its default: the flag's words, the
    variable's text, and the value the settings then hold."""
    field = AppSettings.model_fields[name]
    kind = _without_none(field.annotation)
    default = field.get_default(call_default_factory=True)
    flag = "--" + name.replace("_", "-")
    if kind is bool:
        return (
            ([f"--no-{name.replace('_', '-')}"], "false", False)
            if default
            else ([flag], "true", True)
        )
    if kind is int:
        value = (default or 0) + 1000 if name != "http_port" else 8123
        return [flag, str(value)], str(value), value
    if typing.get_origin(kind) is Literal:
        word = next(w for w in typing.get_args(kind) if w != default)
        return [flag, str(word)], str(word), word
    if kind is pathlib.Path:
        return [flag, "/srv/x"], "/srv/x", pathlib.Path("/srv/x")
    if name == "topic_configs":
        return (
            ["--topic-config", "min.insync.replicas=2"],
            '{"min.insync.replicas": "2"}',
            {"min.insync.replicas": "2"},
        )
    assert kind is str, (name, kind)
    return [flag, "sample-7"], "sample-7", "sample-7"


FLAG_FIELDS = [name for name in AppSettings.model_fields if name not in NOT_FLAGS]


def test_only_passwords_are_not_flags() -> None:
    assert {"sasl_password", "ssl_password"} == NOT_FLAGS
    assert all("SecretStr" in str(AppSettings.model_fields[name].annotation) for name in NOT_FLAGS)


@pytest.mark.parametrize("name", FLAG_FIELDS)
def test_a_flag_and_a_variable_set_each_setting(name: str) -> None:
    words, text, value = _sample(name)
    args = _run_parser().parse_args(["run", "app.py:app", *words])
    given = {
        "application_id": "flags",
        **{k: v for k, v in given_settings(args).items() if v is not None},
    }
    from_flag = AppSettings.load(env={}, **given)
    assert getattr(from_flag, name) == value
    env = {"HEADRACE_APPLICATION_ID": "flags", f"HEADRACE_{name.upper()}": text}
    from_env = AppSettings.load(env=env)
    assert getattr(from_env, name) == value
    # a flag not given leaves the setting to what lies below it
    unset = given_settings(_run_parser().parse_args(["run", "app.py:app"]))
    assert unset[name] is None


def test_a_password_flag_does_not_exist() -> None:
    with pytest.raises(SystemExit):
        _run_parser().parse_args(["run", "app.py:app", "--sasl-password", "secret"])


def test_a_malformed_topic_config_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        _run_parser().parse_args(["run", "app.py:app", "--topic-config", "novalue"])
    assert exited.value.code == 2
    assert "KEY=VALUE" in capsys.readouterr().err

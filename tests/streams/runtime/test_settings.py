from pathlib import Path
from typing import Any

import pytest

from headrace.streams.runtime import AppSettings, SettingsError


def test_later_sources_win(tmp_path: Path) -> None:
    file = tmp_path / "app.toml"
    file.write_text('application_id = "from-file"\ncommit_interval_ms = 500\nlinger_ms = 9\n')
    env = {"HEADRACE_COMMIT_INTERVAL_MS": "700", "HEADRACE_BOOTSTRAP_SERVERS": "h:1"}
    s = AppSettings.load(file, env=env, application_id="kw")
    assert (s.application_id, s.commit_interval, s.linger_ms, s.bootstrap_servers) == (
        "kw",
        700,
        9,
        "h:1",
    )


def test_json_files_are_read(tmp_path: Path) -> None:
    file = tmp_path / "app.json"
    file.write_text('{"application-id": "j", "processing-error-handler": "dead_letter"}')
    s = AppSettings.load(file, env={})
    assert s.processing_error_handler == "dead_letter"
    assert s.dead_letters == "j-dead-letters"


def test_commit_interval_defaults_follow_the_guarantee() -> None:
    assert AppSettings.load(env={}, application_id="a").commit_interval == 1000
    eos = AppSettings.load(env={}, application_id="a", processing_guarantee="exactly_once_v2")
    assert eos.commit_interval == 100


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({}, "application_id"),
        ({"application_id": "a b"}, "application_id"),
        ({"application_id": "a", "commit_interval_ms": 0}, "commit_interval_ms"),
        ({"application_id": "a", "num_standby_replicas": -1}, "num_standby_replicas"),
        ({"application_id": "a", "no_such_thing": 1}, "no_such_thing"),
        ({"application_id": "a", "processing_error_handler": "shrug"}, "processing_error_handler"),
    ],
)
def test_bad_settings_are_refused_with_the_field_named(
    overrides: dict[str, Any], message: str
) -> None:
    with pytest.raises(SettingsError, match=message):
        AppSettings.load(env={}, **overrides)


def test_docstring_examples_run() -> None:
    import doctest

    import headrace.streams.runtime._murmur2 as murmur
    import headrace.streams.runtime._partition_groups as groups
    import headrace.streams.runtime._query_params as query_params
    import headrace.streams.runtime._settings as settings

    for module in (settings, murmur, groups, query_params):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0, module.__name__


def test_headrace_run_flags_reach_the_app_settings(tmp_path: Path) -> None:
    from headrace.cli import build_parser
    from headrace.streams._commands import build_app

    app_file = tmp_path / "app.py"
    app_file.write_text(
        "from headrace.dsl import StreamsBuilder\n"
        "def topology():\n"
        "    builder = StreamsBuilder()\n"
        "    builder.stream('in').to('out')\n"
        "    return builder.build()\n"
    )
    args = build_parser().parse_args(
        [
            "run",
            f"{app_file}:topology",
            "--application-id",
            "flags",
            "--processing-guarantee",
            "exactly_once_v2",
            "--bootstrap-servers",
            "127.0.0.1:1",
        ]
    )
    app = build_app(args)
    assert app.settings.processing_guarantee == "exactly_once_v2"
    assert app.settings.commit_interval == 100  # ms: exactly-once's default

"""``App(...)`` takes each setting as a keyword parameter of its own, typed, so editors
complete the names and type checkers check them; the keywords are AppSettings' fields.
(That mypy flags a misspelt one in a user's file: tests/test_editable_typing.py.)"""

from __future__ import annotations

import inspect
import typing
from pathlib import Path

import pytest

from headrace import App, StreamsBuilder
from headrace.streams.runtime import AppSettings

# App's keyword parameters that are not settings
NOT_SETTINGS = {"settings", "settings_file", "clients", "default_key_serde", "default_value_serde"}


def _setting_keywords() -> dict[str, inspect.Parameter]:
    parameters = inspect.signature(App).parameters
    return {
        name: p
        for name, p in parameters.items()
        if p.kind is inspect.Parameter.KEYWORD_ONLY and name not in NOT_SETTINGS
    }


def _choices(annotation: object) -> set[object]:
    """The fixed words a type allows (its Literal's), however it is nested in a union."""
    if typing.get_origin(annotation) is typing.Literal:
        return set(typing.get_args(annotation))
    return {c for arg in typing.get_args(annotation) for c in _choices(arg)}


def test_every_setting_is_a_keyword_of_its_own_and_none_is_not_given() -> None:
    keywords = _setting_keywords()
    assert set(keywords) == set(AppSettings.model_fields) - {"application_id"}
    assert "application_id" in inspect.signature(App).parameters
    assert all(p.default is None for p in keywords.values())
    assert not any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in inspect.signature(App).parameters.values()
    )


def test_a_keywords_choices_are_its_settings_choices() -> None:
    hints = typing.get_type_hints(App.__init__)
    fields = AppSettings.model_fields
    with_choices = [name for name in _setting_keywords() if _choices(fields[name].annotation)]
    assert "log_level" in with_choices and "acks" in with_choices  # the comparison sees them
    for name in with_choices:
        assert _choices(hints[name]) == _choices(fields[name].annotation), name


def test_the_keywords_given_are_the_settings_and_the_others_come_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HEADRACE_LINGER_MS", "9")
    monkeypatch.setenv("HEADRACE_ACKS", "1")
    app = App(
        "keywords",
        StreamsBuilder(),
        acks="0",
        state_dir=tmp_path,
        topic_configs={"min.insync.replicas": "2"},
        sasl_password="hunter2",
    )
    s = app.settings
    assert (s.acks, s.linger_ms, s.state_dir) == ("0", 9, tmp_path)
    assert s.topic_configs == {"min.insync.replicas": "2"}
    assert s.sasl_password is not None and s.sasl_password.get_secret_value() == "hunter2"


def test_a_misspelt_keyword_is_a_type_error_naming_it() -> None:
    with pytest.raises(TypeError, match="'bootstrap_server'"):
        App("misspelt", StreamsBuilder(), bootstrap_server="h:1")  # type: ignore[call-arg]

"""The one Lifecycle, and every transition table of the project checked by it."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

import pytest

from headrace.base import (
    IllegalTransitionError,
    Lifecycle,
    check_transition,
    transition_table,
)


class Light(enum.Enum):
    OFF = "off"
    ON = "on"
    BROKEN = "broken"


LIGHT = transition_table(
    {Light.OFF: {Light.ON, Light.BROKEN}, Light.ON: {Light.OFF, Light.BROKEN}, Light.BROKEN: ()}
)


def test_moves_the_table_allows_and_refuses_the_rest_naming_both_states() -> None:
    light = Lifecycle("hall light", Light.OFF, LIGHT)
    light.move(Light.ON)
    assert light.can(Light.BROKEN) and not light.can(Light.ON)
    light.move(Light.BROKEN)
    with pytest.raises(IllegalTransitionError, match="hall light: cannot go from BROKEN to ON"):
        light.move(Light.ON)
    assert light.state is Light.BROKEN  # a refused move changes nothing


def test_require_names_the_states_wanted() -> None:
    light = Lifecycle("hall light", Light.OFF, LIGHT)
    light.require(Light.OFF, Light.ON)
    with pytest.raises(IllegalTransitionError, match="is OFF, must be ON"):
        light.require(Light.ON)


def test_a_package_raises_its_own_subclass() -> None:
    class LampError(Exception):
        pass

    class LampTransition(LampError, IllegalTransitionError):
        pass

    class Lamp(Lifecycle[Light]):
        __slots__ = ()
        error = LampTransition

    lamp = Lamp("lamp", Light.BROKEN, LIGHT)
    with pytest.raises(LampError):
        lamp.move(Light.OFF)
    with pytest.raises(LampTransition):
        check_transition(LIGHT, Light.BROKEN, Light.OFF, "lamp", LampTransition)


def test_a_table_missing_a_row_or_mixing_enums_is_refused_when_built() -> None:
    with pytest.raises(ValueError, match="no row for BROKEN"):
        transition_table({Light.OFF: {Light.ON}, Light.ON: {Light.OFF}})

    class Other(enum.Enum):
        X = 1

    with pytest.raises(ValueError, match="mixes enums"):
        transition_table({Light.OFF: {Other.X}, Light.ON: (), Light.BROKEN: ()})  # type: ignore[misc]
    with pytest.raises(TypeError):
        LIGHT[Light.OFF] = frozenset()  # type: ignore[index]


def test_an_initial_state_outside_the_table_is_refused() -> None:
    with pytest.raises(ValueError, match="not a state"):
        Lifecycle("lamp", Light.ON, {Light.OFF: frozenset()})


def _every_table() -> dict[str, Mapping[Any, frozenset[Any]]]:
    from headrace.log_broker.groups import GROUP_TRANSITIONS, MEMBER_TRANSITIONS
    from headrace.log_broker.storage import _log
    from headrace.spark_bridge import _export
    from headrace.state import _lifecycle as store
    from headrace.streams import _lifecycle as task
    from headrace.streams.runtime import _app, _global, _tasks
    from headrace.streams.testing import _driver
    from headrace.transactions import TXN_TRANSITIONS

    tables: dict[str, Mapping[Any, frozenset[Any]]] = {
        "group": GROUP_TRANSITIONS,
        "member": MEMBER_TRANSITIONS,
        "log": _log._TRANSITIONS,
        "export": _export._TRANSITIONS,
        "store": store.STORE_TRANSITIONS,
        "task": task.TASK_TRANSITIONS,
        "app": _app.APP_TRANSITIONS,
        "global stores": _global.GLOBAL_TRANSITIONS,
        "runtime task": _tasks.RUNTIME_TASK_TRANSITIONS,
        "test driver": _driver._DRIVER_TRANSITIONS,
        "transaction": TXN_TRANSITIONS,
    }
    return tables


@pytest.mark.parametrize("name", sorted(_every_table()))
def test_every_lifecycle_table_has_one_row_per_state_and_no_stranger(name: str) -> None:
    table = _every_table()[name]
    states: type[enum.Enum] = type(next(iter(table)))
    assert set(table) == set(states)
    assert all(isinstance(target, states) for targets in table.values() for target in targets)
    assert transition_table(table) == table

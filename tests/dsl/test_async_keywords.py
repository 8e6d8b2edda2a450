"""The async operators take their options as keyword parameters of their own, typed, with
the defaults AsyncOptions has, so editors complete them and show what they default to."""

from __future__ import annotations

import dataclasses
import inspect
import typing

import pytest

from headrace.dsl import KStream
from headrace.dsl._kstream import AsyncOrder
from headrace.streams import AsyncOptions
from headrace.streams._async import ORDERS

OPERATORS = (
    "map_values_async",
    "map_async",
    "flat_map_values_async",
    "filter_async",
    "foreach_async",
)


@pytest.mark.parametrize("operator", OPERATORS)
def test_an_async_operators_options_are_keywords_with_async_options_defaults(
    operator: str,
) -> None:
    parameters = inspect.signature(getattr(KStream, operator)).parameters
    defaults = {f.name: f.default for f in dataclasses.fields(AsyncOptions)}
    assert {n: parameters[n].default for n in defaults} == defaults
    assert all(parameters[n].kind is inspect.Parameter.KEYWORD_ONLY for n in defaults)
    assert not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())


def test_the_order_keyword_allows_the_orders_there_are() -> None:
    assert typing.get_args(AsyncOrder) == ORDERS

"""The suite's modules, most expensive first, so that two workers finish together.

``scripts/dev test`` hands whole modules to two workers (``--dist loadfile``). xdist's own
order puts the modules with the most tests first, which leaves the single long tests (the
README's tour, the demo, the request fuzzer, the wheel's install) for the end, where one
worker runs them while the other idles. Longest first is the classic remedy; a module's
cost is estimated from its tests' ``slow`` marks, as nothing measured is kept between runs
on a fresh machine. ``scripts/dev test`` passes ``--no-loadscope-reorder`` so xdist keeps
this order.

A test that takes far longer than the usual slow one says how long:
``pytest.mark.slow(seconds=60)``. Without that a module of one such test looks cheap and
goes out near the end, where the other worker has nothing left to run beside it.
"""

from __future__ import annotations

import pytest

# Rough costs: a slow test starts brokers, JVMs or Spark; the others take a fraction of a second.
SLOW_TEST_SECONDS = 30.0
TEST_SECONDS = 0.5


def _module(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def estimated_seconds(item: pytest.Item) -> float:
    """``slow(seconds=N)``: N; ``slow``: ``SLOW_TEST_SECONDS``; no mark: ``TEST_SECONDS``."""
    slow = item.get_closest_marker("slow")
    if slow is None:
        return TEST_SECONDS
    return float(slow.kwargs.get("seconds", SLOW_TEST_SECONDS))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    cost: dict[str, float] = {}
    first_seen: dict[str, int] = {}
    for index, item in enumerate(items):
        module = _module(item)
        cost[module] = cost.get(module, 0.0) + estimated_seconds(item)
        first_seen.setdefault(module, index)
    # sort is stable: within a module the tests keep their order
    items.sort(key=lambda item: (-cost[_module(item)], first_seen[_module(item)]))

"""The suite's modules, most expensive first, so that two workers finish together.

``scripts/dev test`` hands whole modules to two workers (``--dist loadfile``). xdist's own
order puts the modules with the most tests first, which leaves the single long tests (the
README's tour, the demo, the request fuzzer, the wheel's install) for the end, where one
worker runs them while the other idles. Longest first is the classic remedy; a module's
cost is estimated from its tests' ``slow`` marks, as nothing measured is kept between runs
on a fresh machine. ``scripts/dev test`` passes ``--no-loadscope-reorder`` so xdist keeps
this order.
"""

from __future__ import annotations

import pytest

# Rough costs: a slow test starts brokers, JVMs or Spark; the others take a fraction of a second.
SLOW_TEST_SECONDS = 30.0
TEST_SECONDS = 0.5


def _module(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    cost: dict[str, float] = {}
    first_seen: dict[str, int] = {}
    for index, item in enumerate(items):
        module = _module(item)
        slow = item.get_closest_marker("slow") is not None
        cost[module] = cost.get(module, 0.0) + (SLOW_TEST_SECONDS if slow else TEST_SECONDS)
        first_seen.setdefault(module, index)
    # sort is stable: within a module the tests keep their order
    items.sort(key=lambda item: (-cost[_module(item)], first_seen[_module(item)]))

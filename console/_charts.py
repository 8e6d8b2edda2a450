"""Produce and consume rates and consumer lag over time, from the broker's own metrics.

The broker counts records in and out per topic and reports every group's lag per
partition (Prometheus text: ``headrace broker --metrics-listen``, or the broker's own
when the console runs beside it). A :class:`MetricsHistory` reads that text every
``interval_s`` seconds in the console's process and keeps the last ``keep`` samples
(a bounded deque: a console left open for days holds the same few kilobytes), so a
chart shows the recent past as soon as a page asks. Rates are the differences of two
samples' counters over the time between them; a counter that went down (the broker
restarted) counts from zero.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

log = logging.getLogger("headrace.console")

RECORDS_IN = "headrace_broker_records_in"
RECORDS_OUT = "headrace_broker_records_out"
GROUP_LAG = "headrace_broker_group_lag"
ReadMetrics = Callable[[], Awaitable[bytes | None]]


@dataclass(frozen=True)
class Sample:
    at: float  # epoch seconds
    records_in: dict[str, float] = field(default_factory=dict)  # counter, by topic
    records_out: dict[str, float] = field(default_factory=dict)  # counter, by topic
    lag: dict[str, float] = field(default_factory=dict)  # records behind, by group


def parse(text: str, at: float) -> Sample:
    """The figures the charts need, out of the broker's Prometheus text.

    >>> s = parse('headrace_broker_records_in_total{topic="t"} 5.0\\n'
    ...           'headrace_broker_group_lag{group="g",topic="t",partition="0"} 2.0\\n'
    ...           'headrace_broker_group_lag{group="g",topic="t",partition="1"} 3.0\\n', 1.0)
    >>> s.records_in, s.lag
    ({'t': 5.0}, {'g': 5.0})
    """
    from prometheus_client.parser import text_string_to_metric_families

    records_in: dict[str, float] = {}
    records_out: dict[str, float] = {}
    lag: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == RECORDS_IN + "_total":
                records_in[sample.labels["topic"]] = sample.value
            elif sample.name == RECORDS_OUT + "_total":
                records_out[sample.labels["topic"]] = sample.value
            elif sample.name == GROUP_LAG:
                group = sample.labels["group"]
                lag[group] = lag.get(group, 0.0) + sample.value
    return Sample(at, records_in, records_out, lag)


def _grown(before: float, after: float) -> float:
    return after if after < before else after - before


def rates(
    samples: list[Sample], counter: str, topic: str | None = None
) -> list[tuple[float, float]]:
    """(time, records per second) between consecutive samples, of every topic's
    ``counter`` ("records_in" or "records_out") or one topic's."""
    out = []
    for a, b in pairwise(samples):
        span = b.at - a.at
        if span <= 0:
            continue
        before: dict[str, float] = getattr(a, counter)
        after: dict[str, float] = getattr(b, counter)
        names = [topic] if topic is not None else list(after)
        grown = sum(_grown(before.get(n, 0.0), after.get(n, 0.0)) for n in names)
        out.append((b.at, grown / span))
    return out


def window_totals(samples: list[Sample]) -> list[dict[str, Any]]:
    """Per topic: records produced and consumed over the samples kept, and the last rates."""
    if not samples:
        return []
    first, last = samples[0], samples[-1]
    topics = sorted(set(last.records_in) | set(last.records_out))
    rows = []
    for topic in topics:
        produced = _grown(first.records_in.get(topic, 0.0), last.records_in.get(topic, 0.0))
        consumed = _grown(first.records_out.get(topic, 0.0), last.records_out.get(topic, 0.0))
        in_rates, out_rates = (rates(samples[-2:], c, topic) for c in ("records_in", "records_out"))
        rows.append(
            {
                "topic": topic,
                "produced": produced,
                "consumed": consumed,
                "produce_rate": in_rates[-1][1] if in_rates else 0.0,
                "consume_rate": out_rates[-1][1] if out_rates else 0.0,
                "produced_total": last.records_in.get(topic, 0.0),
            }
        )
    return rows


class MetricsHistory:
    """The last ``keep`` samples of the broker's metrics, read every ``interval_s``."""

    def __init__(self, read: ReadMetrics, interval_s: float = 5.0, keep: int = 180) -> None:
        self._read = read
        self.interval_s = interval_s
        self.samples: deque[Sample] = deque(maxlen=keep)
        self.problem: str | None = None  # why the last read gave nothing
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="console-metrics-history")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def sample(self) -> None:
        """Read the metrics once and keep what the charts need."""
        try:
            text = await self._read()
        except (OSError, TimeoutError) as error:
            self.problem = f"the broker's metrics did not answer: {error}"
            return
        if text is None:
            self.problem = "the broker has no metrics yet"
            return
        try:
            self.samples.append(parse(text.decode(), time.time()))
            self.problem = None
        except ValueError as error:
            self.problem = f"the broker's metrics did not parse: {error}"

    async def _run(self) -> None:
        while True:
            await self.sample()
            if self.problem:
                log.debug("charts: %s", self.problem)
            await asyncio.sleep(self.interval_s)


def metrics_at(url: str, timeout_s: float = 5.0) -> ReadMetrics:
    """A reader of the Prometheus text a broker serves at ``url`` (its --metrics-listen)."""
    import aiohttp

    async def read() -> bytes | None:
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as session,
                session.get(url) as response,
            ):
                if response.status != 200:
                    return None
                return await response.read()
        except aiohttp.ClientError as error:
            raise OSError(str(error)) from None

    return read

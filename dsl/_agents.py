"""Faust-style agents: ``app.topic``, ``@app.agent``, ``app.table``, ``@app.timer``.

For code written for faust::

    app = AgentApp("word-counts", bootstrap_servers="127.0.0.1:9092")
    words = app.topic("words", value_serde=Serdes.string())
    counts_topic = app.topic("word-counts", key_serde=Serdes.string(), value_serde=Serdes.long())
    counts = app.table("counts", default=int)

    @app.agent(words, sink=counts_topic)
    async def count(stream):
        async for _key, word in stream:
            counts[word] += 1
            yield word, counts[word]

An :class:`AgentApp` is an :class:`~streams.App` whose topology is built from what was
declared on it (:meth:`AgentApp.build`), so agents get what every topology gets: the
commit rules of async processors (an offset commits only once its record's results are
out), exactly-once, the test driver (``TopologyTestDriver(app.build())``) and
``headrace run module.py:app``. Each agent is one processor node
(``_agent_runner.AgentProcessor``) reading its topic and writing to its sink; every
table is a store connected to every agent and timer, so agents that share an app's
tables must read co-partitioned topics (as faust needs for its tables too).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from headrace.streams import App, AsyncOptions, Topology, TopologyError

from ._agent_runner import AgentFn, AgentProcessor, TimerProcessor
from ._agent_tables import Table
from ._builder import StreamsBuilder
from ._errors import TopologyBuildError


@dataclass(frozen=True)
class AgentTopic:
    """A topic and the serdes of its keys and values (``None``: bytes as they are)."""

    name: str
    key_serde: Any = None
    value_serde: Any = None


@dataclass(frozen=True)
class _Agent:
    fn: AgentFn
    topic: AgentTopic
    sink: AgentTopic | None
    options: AsyncOptions
    name: str


@dataclass(frozen=True)
class _Timer:
    fn: Callable[[], Any]
    interval_ms: int
    sink: AgentTopic | None
    name: str


class AgentApp(App):
    """An App declared the faust way; ``options`` are the App's settings."""

    def __init__(self, application_id: str, **options: Any) -> None:
        self._topics: dict[str, AgentTopic] = {}
        self._tables: dict[str, Table] = {}
        self._agents: list[_Agent] = []
        self._timers: list[_Timer] = []
        super().__init__(application_id, topology=self.build, **options)

    def topic(self, name: str, *, key_serde: Any = None, value_serde: Any = None) -> AgentTopic:
        """A topic to read or write; asked again by name, the same one (serdes must agree)."""
        topic = AgentTopic(name, key_serde, value_serde)
        known = self._topics.setdefault(name, topic)
        if known != topic:
            raise TopologyBuildError(f"topic {name!r} was declared before with other serdes")
        return known

    def table(
        self,
        name: str,
        *,
        default: Callable[[], Any] | None = None,
        key_serde: Any = None,
        value_serde: Any = None,
    ) -> Table:
        """A changelogged RocksDB table (``_agent_tables.Table``) agents use like a dict."""
        if name in self._tables:
            raise TopologyBuildError(f"table {name!r} declared twice")
        table = self._tables[name] = Table(name, default, key_serde, value_serde)
        return table

    def agent(
        self,
        topic: AgentTopic,
        *,
        sink: AgentTopic | None = None,
        concurrency: int = 1,
        order: str = "key",
        timeout: float | None = None,
        retries: int = 0,
        backoff: float = 0.1,
        name: str | None = None,
    ) -> Callable[[AgentFn], AgentFn]:
        """Run the decorated ``async def fn(stream)`` over ``topic``; what it yields goes
        to ``sink``. ``concurrency`` copies run per partition, their results per key in
        input order (``order``); a record whose agent raises goes to the processing
        error handler and a fresh copy of the agent takes the next one."""
        try:
            options = AsyncOptions(concurrency, order, timeout, retries, backoff)
        except TopologyError as error:
            raise TopologyBuildError(f"agent on {topic.name}: {error}") from error

        def register(fn: AgentFn) -> AgentFn:
            self._agents.append(_Agent(fn, topic, sink, options, name or fn.__name__))
            return fn

        return register

    def timer(
        self, interval: float, *, sink: AgentTopic | None = None, name: str | None = None
    ) -> Callable[[Callable[[], Any]], Callable[[], Any]]:
        """Call the decorated ``async def fn()`` every ``interval`` seconds of wall-clock
        time, once per task of the agents (it sees that task's table partition); what it
        returns or yields (values or ``(key, value)`` pairs) goes to ``sink``."""
        if not interval > 0:
            raise TopologyBuildError(f"timer interval must be positive seconds, got {interval!r}")

        def register(fn: Callable[[], Any]) -> Callable[[], Any]:
            self._timers.append(_Timer(fn, max(1, int(interval * 1000)), sink, name or fn.__name__))
            return fn

        return register

    def build(self) -> Topology:
        """The topology: a source per topic read, an agent node per agent, a sink per
        sink, a timer node per timer (in the first agent's tasks), a store per table."""
        if not self._agents:
            raise TopologyBuildError("an AgentApp needs at least one agent")
        builder = StreamsBuilder()
        for table in self._tables.values():
            builder.add_state_store(table.store_builder())
        stores = tuple(self._tables)
        sources: dict[str, Any] = {}
        for agent in self._agents:
            topic = agent.topic
            stream = sources.get(topic.name)
            if stream is None:
                stream = sources[topic.name] = builder.stream(
                    topic.name, key_serde=topic.key_serde, value_serde=topic.value_serde
                )
            out = stream.process(
                partial(AgentProcessor, agent.fn, agent.options, stores),
                *stores,
                name=f"agent-{agent.name}",
            )
            _to(out, agent.sink)
        first = sources[self._agents[0].topic.name]
        for timer in self._timers:
            tick, interval = timer.fn, timer.interval_ms
            ticks = first.filter(lambda k, v: False, name=f"timer-{timer.name}-ticks")
            out = ticks.process(
                lambda tick=tick, interval=interval: TimerProcessor(tick, interval, stores),
                *stores,
                name=f"timer-{timer.name}",
            )
            _to(out, timer.sink)
        return builder.build()


def _to(stream: Any, sink: AgentTopic | None) -> None:
    if sink is not None:
        stream.to(sink.name, key_serde=sink.key_serde, value_serde=sink.value_serde)

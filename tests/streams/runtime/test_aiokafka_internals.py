"""The fast paths of ``_aiokafka_internals.py`` are really taken, and its guards refuse
loudly when aiokafka cannot give them what they need. Against the in-process broker."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.consumer import fetcher
from aiokafka.producer.message_accumulator import BatchBuilder
from payments_job import create_topics

from headrace import App, Serdes, StreamsBuilder
from headrace.streams.runtime import AppSettings, AppState, _aiokafka
from headrace.streams.runtime import _aiokafka_internals as internals
from headrace.streams.runtime._aiokafka import AiokafkaGroupConsumer, AiokafkaRecordProducer
from headrace.streams.runtime._assignor import PartitionGroupAssignor
from headrace.streams.runtime._errors import UnsupportedClientError


class Calls:
    """Counts the calls of one method while passing them through."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> None:
        self.count = 0
        inner: Callable[..., Any] = getattr(owner, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return inner(*args, **kwargs)

        monkeypatch.setattr(owner, name, counted)


async def _read(bootstrap: str, topic: str, n: int) -> list[Any]:
    consumer = AIOKafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False
    )
    await consumer.start()
    out: list[Any] = []
    try:
        async with asyncio.timeout(30):
            while len(out) < n:
                for records in (await consumer.getmany(timeout_ms=500)).values():
                    out.extend(records)
    finally:
        await consumer.stop()
    return out


async def _produce(bootstrap: str, topic: str, n: int) -> None:
    settings = AppSettings.load(env={}, application_id="fill", bootstrap_servers=bootstrap)
    producer = AiokafkaRecordProducer(settings)
    await producer.start()
    try:
        await producer.send(
            [(topic, b"k%d" % i, b"v%d" % i, 1_000 + i, (), None) for i in range(n)]
        )
        assert not (await producer.flush()).failures
    finally:
        await producer.stop()


async def test_an_app_fetches_tuples_and_appends_to_the_c_builder(
    broker: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    bootstrap = broker.bootstrap_servers
    await create_topics(bootstrap, "fp-in", "fp-out", partitions=2)
    await _produce(bootstrap, "fp-in", 300)
    builder = StreamsBuilder()
    raw = Serdes.bytes()
    builder.stream("fp-in").map_values(lambda v: v + b"!").to("fp-out", value_serde=raw)
    app = App("fp", builder, bootstrap_servers=bootstrap, state_dir=tmp_path / "state")
    assert internals.install_tuple_fetch()  # the fetcher classes are the fast path's
    takes = Calls(monkeypatch, fetcher.PartitionRecords, "take")
    conversions = Calls(monkeypatch, _aiokafka, "as_tuple")
    public_appends = Calls(monkeypatch, BatchBuilder, "append")
    with caplog.at_level(logging.INFO, logger="headrace.streams.runtime.client"):
        await app.start()
    try:
        out = await _read(bootstrap, "fp-out", 300)
    finally:
        await app.stop()
    assert sorted(r.value for r in out) == sorted(b"v%d!" % i for i in range(300))
    assert takes.count > 0  # records came out of the tuple-building fetcher...
    assert conversions.count == 0  # ...so none was converted one by one
    assert public_appends.count == 0  # every record went straight into the C builder
    assert "fast paths tuple-fetch=on, batch-append=on" in caplog.text


@pytest.mark.parametrize("fast", [True, False])
async def test_the_batch_append_switch_picks_the_path_and_both_deliver(
    broker: Any, monkeypatch: pytest.MonkeyPatch, fast: bool
) -> None:
    monkeypatch.setattr(internals, "BATCH_APPEND", fast)
    public_appends = Calls(monkeypatch, BatchBuilder, "append")
    topic = f"fp-append-{fast}"
    await create_topics(broker.bootstrap_servers, topic, partitions=1)
    await _produce(broker.bootstrap_servers, topic, 50)
    out = await _read(broker.bootstrap_servers, topic, 50)
    assert [(r.key, r.value, r.timestamp) for r in out] == [
        (b"k%d" % i, b"v%d" % i, 1_000 + i) for i in range(50)
    ]
    assert public_appends.count == (0 if fast else 50)


def _eos_settings(bootstrap: str, tmp_path: Path) -> AppSettings:
    return AppSettings.load(
        env={},
        application_id="gen",
        bootstrap_servers=bootstrap,
        state_dir=tmp_path,
        processing_guarantee="exactly_once_v2",
    )


async def test_a_generation_that_cannot_be_read_raises_instead_of_counting_as_valid(
    broker: Any, tmp_path: Path
) -> None:
    settings = _eos_settings(broker.bootstrap_servers, tmp_path)
    consumer = AiokafkaGroupConsumer(settings, "gen", PartitionGroupAssignor({}, ""))
    await consumer.start()
    coordinator: Any = consumer._consumer._coordinator
    try:
        assert consumer.generation_valid() is False  # not joined yet: generation -1
        generation = coordinator.generation
        del coordinator.generation  # as if aiokafka kept it elsewhere
        try:
            with pytest.raises(UnsupportedClientError, match="group generation"):
                consumer.generation_valid()
        finally:
            coordinator.generation = generation
    finally:
        await consumer.stop()


async def test_exactly_once_refuses_to_start_without_a_readable_generation(
    broker: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bootstrap = broker.bootstrap_servers
    await create_topics(bootstrap, "gen-in", "gen-out", partitions=1)
    hidden: list[tuple[Any, int]] = []
    start, stop = AIOKafkaConsumer.start, AIOKafkaConsumer.stop

    async def start_hiding_the_generation(self: Any) -> None:
        await start(self)
        coordinator = self._coordinator
        if hasattr(coordinator, "generation"):  # the group consumer's coordinator
            hidden.append((coordinator, coordinator.generation))
            del coordinator.generation

    async def stop_with_it_back(self: Any) -> None:
        for coordinator, generation in hidden:
            coordinator.generation = generation  # aiokafka's own leave-group needs it
        await stop(self)

    monkeypatch.setattr(AIOKafkaConsumer, "start", start_hiding_the_generation)
    monkeypatch.setattr(AIOKafkaConsumer, "stop", stop_with_it_back)
    builder = StreamsBuilder()
    builder.stream("gen-in").to("gen-out")
    app = App(settings=_eos_settings(bootstrap, tmp_path), topology=builder)
    with pytest.raises(UnsupportedClientError, match="exactly-once could not tell"):
        await app.start()
    assert hidden
    assert app.state is AppState.STOPPED
    assert isinstance(app.failure, UnsupportedClientError)


def test_outside_the_versions_written_for_the_fast_paths_are_off() -> None:
    assert internals.written_for("0.13.0") and internals.written_for("0.14.0b1")
    assert not internals.written_for("0.12.0") and not internals.written_for("0.15.0")
    # A fresh interpreter that believes aiokafka is a later version: the fast paths stay
    # off, it says so as the module loads, and the report names them off.
    program = (
        "import logging, aiokafka; logging.basicConfig(); aiokafka.__version__ = '0.15.0'\n"
        "from headrace.streams.runtime import _aiokafka_internals as i\n"
        "print(i.install_tuple_fetch(), i.BATCH_APPEND); print(i.report())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.splitlines() == [
        "False False",
        "aiokafka 0.15.0 (written for >=0.13,<0.15): fast paths tuple-fetch=off, "
        "batch-append=off, early-add-offsets=off",
    ]
    assert "not a version the runtime was written for" in done.stderr

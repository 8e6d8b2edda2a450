"""Start-up waits for a cluster that is not ready, within ``startup_timeout_ms``.

``headrace run`` instances used to end at once when start-up met a retriable error
(``describing topics: NodeNotReadyError(...)`` while one broker of a cluster was down):
now start-up retries its calls, logs what it waits for, and gives up with one line only
after the bound. The processes are the built-in broker and ``headrace run``; the units
at the end drive :class:`StartupWait` with calls that fail as a client does.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from brokerproc import BrokerProcess, free_port
from rtprocs import Instance, create_topics, produce, read_until
from runtime_apps import INPUT, UPPER

from headrace.streams.runtime._errors import ClientError
from headrace.streams.runtime._startup_wait import StartupWait

WAITS = "start-up waits for the cluster"


@pytest.mark.timeout(120)
async def test_an_instance_started_while_the_broker_is_down_waits_then_runs(
    tmp_path: Path,
) -> None:
    broker = BrokerProcess(tmp_path / "data", "--fsync", "never").start()
    instance: Instance | None = None
    try:
        await create_topics(broker.bootstrap, INPUT, UPPER)
        assert broker.stop() == 0
        instance = Instance(
            "upper_topology",
            "startup-wait",
            broker.bootstrap,
            tmp_path / "state",
            "startup-wait",
            env={"HEADRACE_STARTUP_TIMEOUT_MS": "60000"},
        ).start()
        await asyncio.to_thread(instance.wait_for, WAITS, 30)
        await asyncio.sleep(3)  # the outage goes on a while; start-up keeps waiting
        assert instance.proc is not None and instance.proc.poll() is None, instance.log()
        await asyncio.to_thread(broker.start)
        await asyncio.to_thread(instance.wait_for, "[run] startup-wait running", 60)
        await produce(broker.bootstrap, INPUT, [(b"k", b"after the outage")])
        got = await read_until(broker.bootstrap, UPPER, lambda got: len(got) >= 1)
        assert got == [(b"k", b"AFTER THE OUTAGE")]
        log = instance.log()
        assert "the cluster answered after" in log, log[-3000:]
        # One line as the waiting began (and one per 10 s), not one per attempt.
        lines = [line for line in log.splitlines() if "waits for the cluster" in line]
        assert 1 <= len(lines) <= 2, lines
        assert "Unable connect to" not in log, log[-3000:]
        assert instance.stop() == 0, instance.log()[-3000:]
    finally:
        if instance is not None and instance.proc is not None and instance.proc.poll() is None:
            instance.proc.kill()
            instance.proc.wait(10)
        broker.kill()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("given_as", ["variable", "flag"])
def test_an_instance_whose_broker_never_comes_back_exits_after_the_bound(
    tmp_path: Path, given_as: str
) -> None:
    """The bound is set by ``HEADRACE_STARTUP_TIMEOUT_MS`` or by ``--startup-timeout-ms``."""
    nowhere = f"127.0.0.1:{free_port()}"  # nothing listens there
    by_variable = given_as == "variable"
    instance = Instance(
        "upper_topology",
        "startup-never",
        nowhere,
        tmp_path / "state",
        "startup-never",
        env={"HEADRACE_STARTUP_TIMEOUT_MS": "3000"} if by_variable else None,
    )
    if not by_variable:
        instance.args += ["--startup-timeout-ms", "3000"]
    started = time.monotonic()
    instance.start()
    assert instance.proc is not None
    code = instance.proc.wait(40)
    took = time.monotonic() - started
    log = instance.log()
    assert code == 1, log[-3000:]
    assert took >= 3, f"gave up after {took:.1f} s, before the bound:\n{log[-3000:]}"
    errors = [line for line in log.splitlines() if line.startswith("headrace run: error:")]
    assert len(errors) == 1, log[-3000:]
    assert "gave up waiting for the cluster after 3 s (startup_timeout_ms=3000)" in errors[0]
    assert "connecting to the cluster" in errors[0]
    assert log.count(WAITS) == 1, log[-3000:]  # said once, not per attempt
    assert "Unable connect to" not in log  # nor by aiokafka, per host and attempt
    assert "Traceback" not in log


# -- units: StartupWait with calls that fail as a client does ----------------------------


class _Calls:
    """A call that fails with ``errors`` in turn, then answers ``"ok"``."""

    def __init__(self, *errors: ClientError) -> None:
        self.errors = list(errors)
        self.made = 0

    async def __call__(self) -> str:
        self.made += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


async def test_retriable_errors_are_retried_and_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    not_ready = ClientError("describing topics: NodeNotReadyError('node 2')", retriable=True)
    calls = _Calls(not_ready, not_ready, not_ready)
    with caplog.at_level("INFO", logger="headrace.streams.runtime.app"):
        assert await StartupWait(10_000).call("describing topics", calls) == "ok"
    assert calls.made == 4
    waits = [r.getMessage() for r in caplog.records if WAITS in r.getMessage()]
    assert len(waits) == 1 and "NodeNotReadyError('node 2')" in waits[0], waits
    assert any("the cluster answered after" in r.getMessage() for r in caplog.records)


async def test_a_non_retriable_error_fails_at_once() -> None:
    denied = ClientError("describing topics: TopicAuthorizationFailedError", retriable=False)
    calls = _Calls(denied)
    with pytest.raises(ClientError) as raised:
        await StartupWait(10_000).call("describing topics", calls)
    assert raised.value is denied and calls.made == 1


async def test_past_the_bound_the_error_names_what_was_waited_for() -> None:
    not_ready = ClientError("describing topics: NodeNotReadyError('node 2')", retriable=True)
    calls = _Calls(*[not_ready] * 1000)
    started = time.monotonic()
    with pytest.raises(ClientError) as raised:
        await StartupWait(500).call("describing topics", calls)
    assert 0.4 <= time.monotonic() - started < 5
    message = str(raised.value)
    assert not raised.value.retriable
    assert "after 0.5 s (startup_timeout_ms=500) while describing topics" in message
    assert "NodeNotReadyError('node 2')" in message
    assert 2 <= calls.made <= 10  # backed off, not spun

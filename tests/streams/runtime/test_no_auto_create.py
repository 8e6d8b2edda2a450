"""The application's Kafka clients never make the broker create a topic.

The built-in broker runs here with ``auto.create.topics.enable=true`` (its default, and
real Kafka's), so each test would see a topic appear if a client let it.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from pathlib import Path
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from rtprocs import Cluster, Instance, create_topics, produce

from headrace import App, StreamsBuilder
from headrace.streams.runtime import AppSettings, ClientError, SettingsError, _aiokafka
from headrace.streams.runtime._aiokafka import AiokafkaRecordProducer
from headrace.streams.runtime._aiokafka_internals import forbid_auto_create


async def _topics(bootstrap: str) -> set[str]:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        return set(await admin.list_topics())
    finally:
        await admin.close()


async def test_metadata_requests_of_a_guarded_client_create_nothing(broker: Any) -> None:
    bootstrap = broker.bootstrap_servers
    plain = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    guarded = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    assert forbid_auto_create(guarded)
    await plain.start()
    await guarded.start()
    try:
        # The broker obeys a Metadata request that allows creation (aiokafka's default)...
        await plain.describe_topics(["made-by-metadata"])
        # ...and the guarded client's requests say it must not.
        described = await guarded.describe_topics(["never-made"])
    finally:
        await plain.close()
        await guarded.close()
    assert described[0]["error_code"] == 3  # UNKNOWN_TOPIC_OR_PARTITION
    topics = await _topics(bootstrap)
    assert "made-by-metadata" in topics
    assert "never-made" not in topics


async def test_producing_to_a_missing_topic_fails_naming_it(
    broker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_aiokafka, "TOPIC_WAIT_S", 1.0)
    settings = AppSettings.load(
        env={}, application_id="na", bootstrap_servers=broker.bootstrap_servers
    )
    producer = AiokafkaRecordProducer(settings)
    await producer.start()
    try:
        with pytest.raises(ClientError, match="topic no-such-output does not exist"):
            await producer.send([("no-such-output", b"k", b"v", 0, (), None)])
    finally:
        await producer.stop()
    assert "no-such-output" not in await _topics(broker.bootstrap_servers)


def _copy_topology(source: str, sink: str) -> Any:
    builder = StreamsBuilder()
    builder.stream(source).to(sink)
    return builder


async def test_an_app_with_a_missing_sink_fails_at_start(broker: Any, tmp_path: Path) -> None:
    bootstrap = broker.bootstrap_servers
    await create_topics(bootstrap, "nac-in")
    app = App(
        "nac",
        _copy_topology("nac-in", "nac-out-missing"),
        bootstrap_servers=bootstrap,
        state_dir=tmp_path / "state",
    )
    with pytest.raises(SettingsError, match="sink topics do not exist: nac-out-missing"):
        await app.start()
    assert "nac-out-missing" not in await _topics(bootstrap)


async def _produce(bootstrap: str, topic: str, count: int) -> None:
    await produce(bootstrap, topic, [(b"k%d" % i, b"v%d" % i) for i in range(count)])


async def _delete(bootstrap: str, topic: str) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.delete_topics([topic])
    finally:
        await admin.close()


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
async def test_a_source_topic_deleted_under_headrace_run_stops_it_with_one_error(
    cluster: Cluster, instances: list[Instance], tmp_path: Path, guarantee: str
) -> None:
    bootstrap = cluster.bootstrap
    app_id = "nar" if guarantee == "at_least_once" else "nar-eos"
    source, sink = f"{app_id}-in", f"{app_id}-out"
    await create_topics(bootstrap, source, sink, partitions=3)
    app_file = tmp_path / "copy_app.py"
    app_file.write_text(
        "from headrace import StreamsBuilder\n"
        "def topology():\n"
        "    builder = StreamsBuilder()\n"
        f"    builder.stream({source!r}).to({sink!r})\n"
        "    return builder\n"
    )
    inst = Instance(
        f"{app_file}:topology",
        app_id,
        bootstrap,
        tmp_path / "state",
        app_id,
        env={"HEADRACE_PROCESSING_GUARANTEE": guarantee},
    )
    instances.append(inst.start())
    inst.wait_for("[status] running tasks=0_")
    await _produce(bootstrap, source, 10)
    await _delete(bootstrap, source)

    assert inst.proc is not None
    with contextlib.suppress(subprocess.TimeoutExpired):
        await asyncio.to_thread(inst.proc.wait, 30)
    assert inst.proc.returncode == 1, inst.log()[-3000:]
    lines = inst.log().strip().splitlines()
    assert lines[-1] == (
        f"headrace run: {app_id} stopped: source topic {source} no longer exists: it was "
        "deleted while the application ran (the application never re-creates it)"
    ), inst.log()[-3000:]
    assert "Traceback" not in inst.log()
    # Said once by the runtime's log and once by the command; nothing from aiokafka.
    # Under exactly-once the failed instance's abort may also give up on the deleted
    # topic (its TxnOffsetCommit is retried without end), and says so once.
    said = [line for line in lines if source in line and " INFO " not in line]
    told = [line for line in said if "aborting the transaction failed" not in line]
    assert len(told) == 2 and len(said) - len(told) <= 1, said
    assert not any(" aiokafka." in line for line in said), said
    await asyncio.sleep(1)  # a refresh that would re-create it has had its chance
    topics = await _topics(bootstrap)
    assert source not in topics
    assert sink in topics

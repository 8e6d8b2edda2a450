"""What the console shows of a cluster, read through the Kafka protocol (aiokafka).

The console is a client of any Kafka-compatible cluster: everything here is an admin
request, a ListOffsets or a fetch, never the built-in broker's internals. One
:class:`ClusterReader` holds one admin client and one consumer for the console's life;
each method returns plain data (dicts and lists) for the pages and the JSON routes.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment
from kio.serial.errors import DecodeError

from headrace.base import PLAINTEXT, ClientSecurity
from headrace.base.log_dirs import LogDirsReader

from ._codecs import Decoder, decode
from ._registry_values import RegistryValues

log = logging.getLogger("headrace.console")

# A message browser page shows at most this many records, whatever is asked.
MAX_MESSAGES = 500
_DEFAULT_SOURCE = 5  # DescribeConfigs v1+: the value is the broker's default
TABLE_MODE = "headrace.table.mode"  # a topic that is a table (headrace's brokers only)
TABLE_DISABLED = "disabled"


@dataclass
class Message:
    partition: int
    offset: int
    timestamp: int
    key: str | None
    value: str | None
    headers: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Browsed:
    """A page of the message browser: the records, and why a value did not decode."""

    messages: list[Message]
    problem: str | None = None


class ClusterReader:
    def __init__(
        self,
        bootstrap_servers: str,
        security: ClientSecurity = PLAINTEXT,
        schema_registry: str | None = None,
    ) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.registry = RegistryValues(schema_registry) if schema_registry else None
        self._security = security
        self._options = {"bootstrap_servers": bootstrap_servers, **security.aiokafka_options()}
        self._admin: AIOKafkaAdminClient | None = None
        self._lock = asyncio.Lock()  # one browse at a time on the shared consumer

    async def start(self) -> None:
        self._admin = AIOKafkaAdminClient(**self._options)
        await self._admin.start()

    async def stop(self) -> None:
        if self._admin is not None:
            await self._admin.close()
            self._admin = None

    @property
    def client_options(self) -> dict[str, Any]:
        """What every client of the console connects with (brokers, security)."""
        return dict(self._options)

    @property
    def admin(self) -> AIOKafkaAdminClient:
        if self._admin is None:
            raise RuntimeError("the cluster reader is not started")
        return self._admin

    # -- brokers ------------------------------------------------------------------------

    async def brokers(self) -> dict[str, Any]:
        cluster = await self.admin.describe_cluster()
        brokers = sorted(
            (
                {"id": b["node_id"], "host": b["host"], "port": b["port"], "rack": b.get("rack")}
                for b in cluster["brokers"]
            ),
            key=lambda b: b["id"],
        )
        return {
            "cluster_id": cluster.get("cluster_id"),
            "controller": cluster.get("controller_id"),
            "brokers": brokers,
        }

    async def broker_configs(self, broker_id: int) -> list[dict[str, Any]]:
        return await self._configs(ConfigResource(ConfigResourceType.BROKER, str(broker_id)))

    # -- topics -------------------------------------------------------------------------

    async def topics(self) -> list[dict[str, Any]]:
        names = sorted(await self.admin.list_topics())
        if not names:
            return []
        described = await self.admin.describe_topics(names)
        tps = [
            TopicPartition(t["topic"], p["partition"]) for t in described for p in t["partitions"]
        ]
        (starts, ends), sizes = await asyncio.gather(self._offsets(tps), self.sizes(None))
        rows = []
        for topic in sorted(described, key=lambda t: t["topic"]):
            mine = [tp for tp in tps if tp.topic == topic["topic"]]
            rows.append(
                {
                    "name": topic["topic"],
                    "internal": bool(topic.get("is_internal")),
                    "partitions": len(topic["partitions"]),
                    "records": sum(ends[tp] - starts[tp] for tp in mine),
                    "end_offset": sum(ends[tp] for tp in mine),
                    "ends": {tp.partition: ends[tp] for tp in mine},
                    "size": None
                    if sizes is None
                    else sum(sizes.get((tp.topic, tp.partition), 0) for tp in mine),
                }
            )
        return rows

    async def topic(self, name: str) -> dict[str, Any] | None:
        if name not in await self.admin.list_topics():
            return None
        [described] = await self.admin.describe_topics([name])
        partitions = sorted(described["partitions"], key=lambda p: p["partition"])
        tps = [TopicPartition(name, p["partition"]) for p in partitions]
        (starts, ends), sizes = await asyncio.gather(
            self._offsets(tps), self.sizes({name: [tp.partition for tp in tps]})
        )
        return {
            "name": name,
            "partitions": [
                {
                    "partition": tp.partition,
                    "leader": p["leader"],
                    "replicas": list(p["replicas"]),
                    "isr": list(p["isr"]),
                    "start_offset": starts[tp],
                    "end_offset": ends[tp],
                    "records": ends[tp] - starts[tp],
                    "size": None if sizes is None else sizes.get((name, tp.partition), 0),
                }
                for tp, p in zip(tps, partitions, strict=True)
            ],
            "configs": await self._configs(ConfigResource(ConfigResourceType.TOPIC, name)),
            "size": None
            if sizes is None
            else sum(sizes.get((name, tp.partition), 0) for tp in tps),
        }

    async def table_modes(self, names: list[str]) -> dict[str, str]:
        """``headrace.table.mode`` of each topic that sets one other than ``disabled``,
        in one DescribeConfigs; a cluster that does not know the key has none."""
        if not names:
            return {}
        resources = [
            ConfigResource(ConfigResourceType.TOPIC, name, configs={TABLE_MODE: None})
            for name in names
        ]
        modes = {}
        for response in await self.admin.describe_configs(resources):
            for result in response.resources:
                name, entries = result[3], result[4]
                for entry in entries:
                    if entry[0] == TABLE_MODE and entry[1] not in (None, TABLE_DISABLED):
                        modes[name] = str(entry[1])
        return modes

    async def sizes(self, topics: dict[str, list[int]] | None) -> dict[tuple[str, int], int] | None:
        """Bytes on disk per partition (DescribeLogDirs), or None where the cluster does
        not answer it: sizes are then shown as unknown, the rest of the page as usual."""
        try:
            async with LogDirsReader(
                self.bootstrap_servers, security=self._security, client_id="headrace-console"
            ) as reader:
                sizes: dict[tuple[str, int], int] = await reader.partition_sizes(topics)
                return sizes
        except (OSError, ValueError, EOFError, TimeoutError, DecodeError) as error:
            log.debug("no log directory sizes: %s", error)
            return None

    async def create_topic(
        self, name: str, partitions: int, replication_factor: int, configs: dict[str, str]
    ) -> None:
        if not name or partitions < 1 or replication_factor < 1:
            raise ValueError(
                "a topic needs a name, at least one partition and a replication factor of 1 or more"
            )
        response = await self.admin.create_topics(
            [NewTopic(name, partitions, replication_factor, topic_configs=configs)]
        )
        for entry in response.topic_errors:
            if entry[1]:
                raise ValueError(
                    f"cannot create {name!r}: {entry[2] if len(entry) > 2 else entry[1]}"
                )

    async def messages(
        self,
        topic: str,
        partitions: list[int] | None = None,
        *,
        offset: int | None = None,
        timestamp: int | None = None,
        limit: int = 50,
        read_committed: bool = True,
        key_format: str = "auto",
        value_format: str = "auto",
    ) -> Browsed:
        """Up to ``limit`` records of each chosen partition from ``offset`` (or the first
        at or after ``timestamp``, or the last ``limit`` when neither is given), keys
        and values shown in the formats asked for."""
        limit = max(1, min(limit, MAX_MESSAGES))
        info = await self.topic(topic)
        if info is None:
            raise LookupError(f"topic {topic!r} does not exist")
        chosen = [
            p["partition"]
            for p in info["partitions"]
            if partitions is None or p["partition"] in partitions
        ]
        tps = [TopicPartition(topic, p) for p in chosen]
        consumer = AIOKafkaConsumer(
            **self._options,
            enable_auto_commit=False,
            isolation_level="read_committed" if read_committed else "read_uncommitted",
        )
        async with self._lock:
            await consumer.start()
            try:
                records = await self._browse(consumer, tps, info, offset, timestamp, limit)
            finally:
                await consumer.stop()
            decoder = Decoder(self.registry)
            shown = (
                await asyncio.to_thread(_shown, records, decoder, key_format, value_format)
                if decoder.needs_registry(key_format, value_format)  # blocking HTTP
                else _shown(records, decoder, key_format, value_format)
            )
        return Browsed(shown, decoder.problem)

    async def _browse(
        self,
        consumer: AIOKafkaConsumer,
        tps: list[TopicPartition],
        info: dict[str, Any],
        offset: int | None,
        timestamp: int | None,
        limit: int,
    ) -> list[Any]:
        """The records (aiokafka's, bytes as fetched) from where the page starts."""
        consumer.assign(tps)
        bounds = {
            TopicPartition(info["name"], p["partition"]): (p["start_offset"], p["end_offset"])
            for p in info["partitions"]
        }
        by_time = (
            await consumer.offsets_for_times({tp: timestamp for tp in tps})
            if timestamp is not None
            else {}
        )
        wanted: dict[TopicPartition, int] = {}
        for tp in tps:
            start, end = bounds[tp]
            if timestamp is not None:
                found = by_time.get(tp)
                first = found.offset if found is not None else end
            elif offset is not None:
                first = max(start, min(offset, end))
            else:
                first = max(start, end - limit)
            if first < end:
                consumer.seek(tp, first)
                wanted[tp] = min(end, first + limit)
            else:
                consumer.pause(tp)
        out: list[Any] = []
        deadline = asyncio.get_running_loop().time() + 5
        while wanted and asyncio.get_running_loop().time() < deadline:
            batches = await consumer.getmany(timeout_ms=200)
            for tp, records in batches.items():
                stop = wanted.get(tp)
                if stop is None:
                    continue
                for record in records:
                    if record.offset >= stop:
                        break
                    out.append(record)
                if records and (
                    records[-1].offset + 1 >= stop or await consumer.position(tp) >= stop
                ):
                    consumer.pause(tp)
                    del wanted[tp]
            for tp in list(wanted):  # transaction markers end a partition without a record
                if await consumer.position(tp) >= wanted[tp]:
                    del wanted[tp]
        return sorted(out, key=lambda r: (r.partition, r.offset))

    # -- groups -------------------------------------------------------------------------

    async def groups(self) -> list[dict[str, Any]]:
        listed = await self.admin.list_consumer_groups()
        ids = sorted({entry[0] for entry in listed})
        if not ids:
            return []
        described = {g["group"]: g for g in await self._describe_groups(ids)}
        return [
            {
                "group": group,
                "state": described[group]["state"],
                "members": len(described[group]["members"]),
                "protocol": described[group]["protocol"],
            }
            for group in ids
            if group in described
        ]

    async def group(self, group_id: str) -> dict[str, Any] | None:
        [described] = await self._describe_groups([group_id])
        committed = await self.admin.list_consumer_group_offsets(group_id)
        if described["state"] == "Dead" and not committed:
            return None
        assigned = {
            tp: member["member_id"]
            for member in described["members"]
            for tp in member["assignment"]
        }
        tps = sorted(set(committed) | set(assigned))
        _starts, ends = await self._offsets(tps)
        offsets = []
        for tp in tps:
            meta = committed.get(tp)
            position = meta.offset if meta is not None and meta.offset >= 0 else None
            offsets.append(
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "committed": position,
                    "end_offset": ends.get(tp),
                    "member": assigned.get(tp),
                    "lag": None
                    if position is None or tp not in ends
                    else max(0, ends[tp] - position),
                }
            )
        return {
            **described,
            "offsets": offsets,
            "lag": sum(o["lag"] for o in offsets if o["lag"] is not None),
        }

    async def _describe_groups(self, ids: list[str]) -> list[dict[str, Any]]:
        # One group per request: aiokafka sends DescribeGroups v3 but reads the answer
        # as v2, which lacks v3's field after each group, so a second group in one
        # response is read from the wrong bytes (and the failed read drops the connection).
        responses = await asyncio.gather(
            *(self.admin.describe_consumer_groups([group]) for group in ids)
        )
        out = []
        for response in (r for listed in responses for r in listed):
            for group in response.groups:
                error_code, group_id, state, protocol_type, protocol, members = group[:6]
                out.append(
                    {
                        "group": group_id,
                        "state": state,
                        "protocol_type": protocol_type,
                        "protocol": protocol,
                        "error_code": error_code,
                        "members": [_member(m, protocol_type) for m in members],
                    }
                )
        return out

    # -- helpers ------------------------------------------------------------------------

    async def _offsets(
        self, tps: list[TopicPartition]
    ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
        if not tps:
            return {}, {}
        consumer = AIOKafkaConsumer(**self._options, enable_auto_commit=False)
        await consumer.start()
        try:
            return await consumer.beginning_offsets(tps), await consumer.end_offsets(tps)
        finally:
            await consumer.stop()

    async def _configs(self, resource: ConfigResource) -> list[dict[str, Any]]:
        rows = []
        for response in await self.admin.describe_configs([resource]):
            for result in response.resources:
                for entry in result[4]:
                    # v0 carries is_default (a bool) where v1+ carry config_source
                    name, value, source, sensitive = entry[0], entry[1], entry[3], entry[4]
                    default = source if isinstance(source, bool) else source == _DEFAULT_SOURCE
                    rows.append(
                        {
                            "name": name,
                            "value": None if sensitive else value,
                            "source": "default" if default else "override",
                        }
                    )
        return sorted(rows, key=lambda r: r["name"])


def _shown(
    records: list[Any], decoder: Decoder, key_format: str, value_format: str
) -> list[Message]:
    return [
        Message(
            record.partition,
            record.offset,
            record.timestamp,
            decoder.decode(record.key, key_format),
            decoder.decode(record.value, value_format),
            [(k, decode(v, "string") or "") for k, v in record.headers],
        )
        for record in records
    ]


def _member(member: Any, protocol_type: str) -> dict[str, Any]:
    member_id, group_instance_id, client_id, client_host = member[0], None, member[1], member[2]
    if len(member) == 6:  # DescribeGroups v4+: group_instance_id after member_id
        member_id, group_instance_id, client_id, client_host = (
            member[0],
            member[1],
            member[2],
            member[3],
        )
    raw_assignment = member[-1]
    assignment: list[TopicPartition] = []
    if protocol_type == "consumer" and raw_assignment:
        try:
            decoded = ConsumerProtocolMemberAssignment.decode(raw_assignment)
            assignment = [
                TopicPartition(topic, p) for topic, parts in decoded.assignment for p in parts
            ]
        except Exception:  # a member of another protocol's layout: shown without partitions
            assignment = []
    return {
        "member_id": member_id,
        "group_instance_id": group_instance_id,
        "client_id": client_id,
        "client_host": client_host,
        "assignment": sorted(assignment),
    }

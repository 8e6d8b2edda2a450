"""`headrace demo`: the whole pipeline on the embedded default.

Step by step:

1. start the built-in broker in this process, on a free loopback port with its data in
   a temporary directory (or use the broker ``--bootstrap-servers`` names);
2. create the examples' topics and start two example topologies as services (``App``
   instances in this process, each in its consumer group): page views per page and
   minute (``examples.page_views``: repartition, windowed counts in RocksDB with
   changelogs, one final count per closed minute) and IoT sensor readings
   (``examples.iot_sensors``: validation with a dead-letter topic, enrichment,
   alerts). Each group starts at the current end of its input, so a run against a
   broker that already holds data counts only its own events;
3. generate realistic events minute by minute of event time (page views of a few
   hundred users over five pages, a little out of order; readings of six sensors with
   the odd broken probe and malformed message) while a reader prints the results the
   services produce, as they arrive; on a terminal, a bar shows the events sent;
4. close the last minute (a view per page past its grace period), wait for every
   result (on a terminal, a bar of the results in), and check them against what was
   generated: each closed minute's count per page, and how many readings were
   enriched, alerted on and dead-lettered;
5. hand the per-minute counts to Delta Lake, exactly once, and report on them with
   Spark SQL (``headrace._handoff``; ``--no-spark`` skips it). With ``--report-from
   table`` the counts topic is a table topic instead, made so before step 3 and written
   by the table writer (beside the built-in broker, the demo's own), and the report
   reads its table (``headrace._table_handoff``).

Exit code 0 when every result matches, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import random
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ._demo_progress import Phases

MINUTE = 60_000
GRACE_MS = 10_000  # examples.page_views accepts views up to 10 s late
PAGES = ("/home", "/pricing", "/docs", "/blog", "/signup")
PAGE_WEIGHTS = (50, 15, 20, 10, 5)
SENSORS = ("s-1", "s-2", "s-3", "s-4", "s-5", "s-6")
READINGS_PER_MINUTE = 60
IOT_OUTCOMES = ("enriched", "alerts", "dead-lettered")
PARTITIONS = 3


def register(subparsers: Any, broker_options: argparse.ArgumentParser) -> None:
    demo = subparsers.add_parser("demo", help="run the main job on the embedded broker")
    demo.add_argument(
        "--bootstrap-servers",
        default=None,
        help="use this broker instead of starting the built-in one",
    )
    demo.add_argument("--events", type=int, default=10_000, help="page views to generate")
    demo.add_argument("--minutes", type=int, default=5, help="minutes of event time")
    demo.add_argument(
        "--pause",
        type=float,
        default=0.6,
        help="seconds between generated minutes, so results show live",
    )
    demo.add_argument(
        "--no-spark",
        action="store_true",
        help="skip the hand-off to Delta Lake and the Spark SQL report",
    )
    demo.add_argument(
        "--report-from",
        choices=("export", "table"),
        default="export",
        help="what the Spark report reads: a Delta table the export job writes from the"
        " per-minute counts topic (default), or that topic's own table, the topic being"
        " made a table topic (headrace.table.mode=key_value)",
    )
    demo.add_argument(
        "--table-location",
        metavar="DIR",
        help="with --report-from table, where the tables are: with --bootstrap-servers that"
        " broker's --table-location; with the built-in broker where the demo's table writer"
        " keeps them (default: a temporary directory)",
    )
    demo.add_argument(
        "--console-listen",
        default="127.0.0.1:0",
        metavar="HOST:PORT",
        help="where the web console serves while the demo runs "
        "(default: a free port on loopback; 'off' for none)",
    )
    demo.set_defaults(handler=lambda args: asyncio.run(run_demo(args)))


# -- events -----------------------------------------------------------------------------


def page_views(
    rng: random.Random, start: int, minute: int, n: int
) -> list[tuple[str, dict[str, str], int]]:
    """``n`` views in ``minute``, each up to 5 s out of order (well inside the grace)."""
    users = [f"user-{i}" for i in range(300)]
    step = MINUTE / n
    views = []
    for i in range(n):
        ts = start + minute * MINUTE + int(i * step)
        ts = max(start + minute * MINUTE, ts - rng.randrange(5_000))
        user = rng.choice(users)
        views.append((user, {"page": rng.choices(PAGES, PAGE_WEIGHTS)[0], "user": user}, ts))
    return views


def readings(rng: random.Random, n: int) -> list[tuple[str, bytes]]:
    """Sensor readings as the probes send them: mostly valid JSON, some broken."""
    out = []
    for _ in range(n):
        sensor = rng.choice(SENSORS)
        roll = rng.random()
        if roll < 0.03:
            body: dict[str, Any] = {"sensor_id": sensor, "celsius": "n/a", "humidity": 50}
        elif roll < 0.06:
            body = {"sensor_id": sensor, "celsius": 412.0, "humidity": 50}  # a broken probe
        else:
            body = {
                "sensor_id": sensor,
                "celsius": round(rng.gauss(20, 12), 1),
                "humidity": round(rng.uniform(20, 90), 1),
            }
        out.append((sensor, json.dumps(body).encode()))
    return out


def _hh_mm(ms: int) -> str:
    """A minute as ``examples.page_views`` reports it."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%H:%M")


def expected_iot(generated: list[tuple[str, bytes]]) -> Counter[str]:
    """What the IoT topology must make of ``generated``, by its own rules."""
    import pydantic

    from headrace.examples.iot_sensors import ALERT_ABOVE_C, Reading, enrich, plausible

    outcome: Counter[str] = Counter()
    for sensor, raw in generated:
        try:
            reading = Reading.model_validate_json(raw)
        except pydantic.ValidationError:
            outcome["dead-lettered"] += 1
            continue
        if not plausible(reading):
            outcome["implausible"] += 1
            continue
        outcome["enriched"] += 1
        enriched = enrich(sensor, reading)
        if enriched.celsius > ALERT_ABOVE_C[enriched.site]:
            outcome["alerts"] += 1
    return outcome


# -- plumbing ---------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def _broker(bootstrap: str | None) -> AsyncIterator[tuple[str, str | None]]:
    """The broker's bootstrap address, and the URL of the schema registry beside it
    (None with a broker given: the demo knows of no registry there)."""
    if bootstrap:
        print(f"[broker]   using {bootstrap}")
        yield bootstrap, None
        return
    from headrace.log_broker import Broker
    from headrace.schema_registry import SchemaRegistryServer

    with tempfile.TemporaryDirectory(prefix="headrace-demo-") as data_dir:
        async with Broker(
            Path(data_dir) / "broker",
            port=0,
            num_partitions=PARTITIONS,
            group_initial_rebalance_delay_ms=0,
        ) as broker:
            print(f"[broker]   built-in broker on {broker.bootstrap_servers} (data: {data_dir})")
            # The registry beside it, as `headrace broker --schema-registry-listen` runs it.
            async with SchemaRegistryServer(broker.bootstrap_servers, port=0) as registry:
                print(f"[registry] schema registry on {registry.url}")
                yield broker.bootstrap_servers, registry.url


async def _ensure_topics(bootstrap: str, topics: list[str]) -> dict[str, int]:
    """Create the missing ``topics``; return the partition count of each."""
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        missing = [t for t in topics if t not in set(await admin.list_topics())]
        if missing:
            await admin.create_topics([NewTopic(t, PARTITIONS, 1) for t in missing])
        described = await admin.describe_topics(topics)
    finally:
        await admin.close()
    return {t["topic"]: len(t["partitions"]) for t in described}


async def _end_offsets(bootstrap: str, partitions: dict[str, int]) -> dict[Any, int]:
    """The end of every partition of the topics in ``partitions`` now."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await consumer.start()
    try:
        tps = [TopicPartition(t, p) for t, n in partitions.items() for p in range(n)]
        return dict(await consumer.end_offsets(tps))
    finally:
        await consumer.stop()


async def _start_group_at(bootstrap: str, group: str, ends: dict[Any, int]) -> None:
    """Commit ``ends`` for ``group`` before its first member joins: it starts there."""
    from aiokafka import AIOKafkaConsumer

    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False
    )
    await consumer.start()
    try:
        consumer.assign(list(ends))
        await consumer.commit(dict(ends))
    finally:
        await consumer.stop()


# -- the run ----------------------------------------------------------------------------


async def run_demo(args: argparse.Namespace) -> int:
    from headrace.examples import iot_sensors
    from headrace.examples import page_views as views_app
    from headrace.streams.runtime import App

    # The services report bad readings as they dead-letter them; the demo shows the
    # dead-letter topic instead, so only errors reach the terminal.
    logging.basicConfig(level=logging.ERROR, format="[log]      %(name)s: %(message)s")
    started = time.monotonic()
    run_id = uuid.uuid4().hex[:6]
    outputs = [
        views_app.PER_MINUTE,
        iot_sensors.ENRICHED,
        iot_sensors.ALERTS,
        iot_sensors.DEAD_LETTERS,
    ]
    inputs = [views_app.VIEWS, iot_sensors.READINGS]
    from_table = args.report_from == "table" and not args.no_spark
    if from_table and args.bootstrap_servers and not args.table_location:
        print("[table]    --report-from table with --bootstrap-servers needs --table-location")
        return 2
    async with _broker(args.bootstrap_servers) as (bootstrap, registry_url):
        ends = await _end_offsets(bootstrap, await _ensure_topics(bootstrap, inputs + outputs))
        print(f"[topics]   {', '.join(inputs + outputs)}")
        with (
            tempfile.TemporaryDirectory(prefix="headrace-demo-state-") as state_dir,
            contextlib.ExitStack() as beside,
        ):
            location = args.table_location or str(Path(state_dir) / "lake")
            if from_table:
                from ._table_handoff import make_table_topic, table_writer

                await asyncio.to_thread(make_table_topic, bootstrap, views_app.PER_MINUTE)
                if not args.bootstrap_servers:
                    beside.enter_context(table_writer(bootstrap, location))
                print(f"[table]    {views_app.PER_MINUTE} is a table topic, at {location}")
            apps = []
            for name, topology, source in (
                ("page-views", views_app.build_topology, views_app.VIEWS),
                ("iot", iot_sensors.build_topology, iot_sensors.READINGS),
            ):
                app_id = f"demo-{name}-{run_id}"
                await _start_group_at(
                    bootstrap, app_id, {tp: o for tp, o in ends.items() if tp.topic == source}
                )
                app = App(
                    app_id,
                    topology,
                    bootstrap_servers=bootstrap,
                    state_dir=state_dir,
                    commit_interval_ms=200,
                    http_port=0,
                    log_level="WARNING",
                )
                await app.start()
                apps.append(app)
                print(f"[service]  {app_id} running ({name} topology), http://{app.host}/health")
            console = await _start_console(
                args.console_listen, bootstrap, apps, registry_url, location if from_table else None
            )
            try:
                await _wait_running(apps)
                ok, views = await _generate_and_watch(args, bootstrap, ends, apps)
            finally:
                for app in apps:
                    await app.stop()
                if console is not None:
                    await console.stop()
            start = {tp.partition: o for tp, o in ends.items() if tp.topic == views_app.PER_MINUTE}
            if ok and from_table:
                from ._table_handoff import table_hand_off

                ok = await asyncio.to_thread(
                    table_hand_off, views_app.PER_MINUTE, start, location, views
                )
            elif ok and not args.no_spark:
                from ._handoff import hand_off

                ok = await asyncio.to_thread(
                    hand_off,
                    bootstrap,
                    views_app.PER_MINUTE,
                    start,
                    str(Path(state_dir) / "delta" / "page_views"),
                    views,
                )
    took = time.monotonic() - started
    print(f"[done]     {'all results match' if ok else 'RESULTS DO NOT MATCH'} ({took:.1f} s)")
    return 0 if ok else 1


async def _start_console(
    listen: str,
    bootstrap: str,
    apps: list[Any],
    registry_url: str | None,
    table_location: str | None,
) -> Any:
    """The web console on the demo's broker, registry and services (and the lag of the
    table topic's table, with ``table_location``), or None when off."""
    if listen == "off":
        return None
    from headrace.console import Console
    from headrace.console._commands import parse_listen

    console = Console(
        bootstrap,
        apps=[f"http://{app.host}" for app in apps],
        schema_registry=registry_url,
        table_location=table_location,
    )
    await console.start(*parse_listen(listen))
    print(
        f"[console]  http://{console.address} (topics, groups, the services and their topologies)"
    )
    return console


async def _wait_running(apps: list[Any], within: float = 30) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if all(app.status()["tasks"] and not app.status()["restoring"] for app in apps):
            return
        for app in apps:
            if app.failure is not None:
                raise RuntimeError(f"{app.settings.application_id} failed: {app.failure}")
        await asyncio.sleep(0.1)
    raise RuntimeError("the example services did not get their partitions in time")


async def _generate_and_watch(
    args: argparse.Namespace, bootstrap: str, ends: dict[Any, int], apps: list[Any]
) -> tuple[bool, dict[tuple[str, str], int]]:
    from aiokafka import AIOKafkaProducer

    from headrace.examples import iot_sensors
    from headrace.examples import page_views as views_app

    rng = random.Random(7)
    start = (int(time.time() * 1000) // MINUTE - args.minutes - 1) * MINUTE
    per_minute = max(1, args.events // args.minutes)
    phases = Phases()
    watcher = _Watcher(bootstrap, ends, phases.say)
    watch = asyncio.create_task(watcher.run())
    expected_views: Counter[tuple[str, int]] = Counter()
    generated: list[tuple[str, bytes]] = []
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    await producer.start()
    sent = 0
    phases.begin("generating", args.minutes * (per_minute + READINGS_PER_MINUTE), "events")
    try:
        for minute in range(args.minutes):
            batch = page_views(rng, start, minute, per_minute)
            for user, view, ts in batch:
                expected_views[(view["page"], (ts - start) // MINUTE)] += 1
                await producer.send(
                    views_app.VIEWS, json.dumps(view).encode(), key=user.encode(), timestamp_ms=ts
                )
                sent += 1
                if sent % 100 == 0:
                    phases.reach(sent)
            sensors = readings(rng, READINGS_PER_MINUTE)
            generated.extend(sensors)
            for sensor, raw in sensors:
                await producer.send(iot_sensors.READINGS, raw, key=sensor.encode())
            await producer.flush()
            sent += len(sensors)
            phases.reach(sent)
            phases.say(
                f"[generate] minute {minute + 1}/{args.minutes}: {len(batch)} page views,"
                f" {len(sensors)} sensor readings"
            )
            await asyncio.sleep(args.pause)
        # One view per page past the last minute's grace closes that minute everywhere.
        close_at = start + args.minutes * MINUTE + GRACE_MS + 1_000
        for page in PAGES:
            await producer.send(
                views_app.VIEWS,
                json.dumps({"page": page, "user": "closer"}).encode(),
                key=b"closer",
                timestamp_ms=close_at,
            )
        await producer.flush()
    finally:
        phases.end()
        await producer.stop()
    iot = expected_iot(generated)
    views = {(page, _hh_mm(start + m * MINUTE)): n for (page, m), n in expected_views.items()}
    phases.begin("results", watcher.expected(views, iot), "results")
    try:
        ok = await watcher.wait_for(views, iot, within=30, progress=phases.reach)
    finally:
        phases.end()
    watch.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await watch
    _summary(watcher, views, iot, apps)
    return ok, views


class _Watcher:
    """Reads the services' output topics from where they stood at the start, printing
    results as they arrive."""

    def __init__(
        self, bootstrap: str, ends: dict[Any, int], say: Callable[[str], None] = print
    ) -> None:
        self.bootstrap = bootstrap
        self.say = say
        self.ends = ends
        self.minute_counts: dict[tuple[str, str], int] = {}
        self.iot: Counter[str] = Counter()
        self._changed = asyncio.Event()

    async def run(self) -> None:
        from aiokafka import AIOKafkaConsumer

        from headrace.examples import iot_sensors
        from headrace.examples import page_views as views_app

        consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap, enable_auto_commit=False)
        await consumer.start()
        names = {
            iot_sensors.ENRICHED: "enriched",
            iot_sensors.ALERTS: "alerts",
            iot_sensors.DEAD_LETTERS: "dead-lettered",
        }
        try:
            mine = [tp for tp in self.ends if tp.topic in names or tp.topic == views_app.PER_MINUTE]
            consumer.assign(mine)
            for tp in mine:
                consumer.seek(tp, self.ends[tp])
            while True:
                batches = await consumer.getmany(timeout_ms=200)
                for tp, records in batches.items():
                    if tp.topic == views_app.PER_MINUTE:
                        self._minutes([json.loads(r.value) for r in records])
                    else:
                        self.iot[names[tp.topic]] += len(records)
                        if tp.topic == iot_sensors.ALERTS:
                            alerts = [json.loads(r.value) for r in records]
                            shown = ", ".join(
                                f"{a['sensor_id']} ({a['site']}) {a['celsius']} C"
                                for a in alerts[:3]
                            )
                            more = f" and {len(alerts) - 3} more" if len(alerts) > 3 else ""
                            self.say(f"[alerts]   {shown}{more}")
                if batches:
                    self._changed.set()
        finally:
            await consumer.stop()

    def _minutes(self, reports: list[dict[str, Any]]) -> None:
        by_minute: dict[str, list[str]] = {}
        for report in reports:
            self.minute_counts[(report["page"], report["minute"])] = report["views"]
            by_minute.setdefault(report["minute"], []).append(f"{report['page']} {report['views']}")
        for minute, pages in sorted(by_minute.items()):
            self.say(f"[views]    minute {minute} UTC closed: {', '.join(sorted(pages))}")

    @staticmethod
    def expected(views: dict[tuple[str, str], int], iot: Counter[str]) -> int:
        """How many results the services must produce: a count per page and minute, and
        a record per enriched, alerting and dead-lettered reading."""
        return len(views) + sum(iot[k] for k in IOT_OUTCOMES)

    def arrived(self, views: dict[tuple[str, str], int], iot: Counter[str]) -> int:
        """How many of the expected results are in (a count only once it is right)."""
        counted = sum(self.minute_counts.get(key) == n for key, n in views.items())
        return counted + sum(min(self.iot[k], iot[k]) for k in IOT_OUTCOMES)

    async def wait_for(
        self,
        views: dict[tuple[str, str], int],
        iot: Counter[str],
        within: float,
        progress: Callable[[int], None] | None = None,
    ) -> bool:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if progress is not None:
                progress(self.arrived(views, iot))
            counted = all(self.minute_counts.get(key) == n for key, n in views.items())
            if counted and all(self.iot[k] == iot[k] for k in IOT_OUTCOMES):
                return True
            self._changed.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._changed.wait(), max(0.0, deadline - time.monotonic()))
        return False


def _summary(
    watcher: _Watcher, views: dict[tuple[str, str], int], iot: Counter[str], apps: list[Any]
) -> None:
    total = sum(views.values())
    counted = sum(n for key, n in watcher.minute_counts.items() if key in views)
    closed = [key for key in watcher.minute_counts if key in views]
    print(
        f"[result]   page views: {counted} of {total} counted, in {len(closed)} of {len(views)}"
        f" page-minutes"
    )
    for page in PAGES:
        n = sum(n for (p, m), n in watcher.minute_counts.items() if p == page and (p, m) in views)
        print(f"             {page:<9} {n:>6}")
    print(
        f"[result]   sensor readings: {watcher.iot['enriched']} enriched (expected {iot['enriched']}),"
        f" {watcher.iot['alerts']} alerts ({iot['alerts']}),"
        f" {watcher.iot['dead-lettered']} dead-lettered ({iot['dead-lettered']}),"
        f" {iot['implausible']} implausible dropped"
    )
    for app in apps:
        s = app.status()
        print(
            f"[service]  {s['application_id']}: consumed {s['consumed']}, produced {s['produced']},"
            f" tasks {','.join(s['tasks'])}"
        )

"""Enrichment through a slow HTTP service: headrace's async operators against faust and Quix.

One run starts the built-in broker and a local HTTP service (127.0.0.1) that answers
every ``GET /customer/<id>`` after 10 ms, then lets each framework enrich orders with
the customer record, one HTTP call per order, and write them out as JSON:

- headrace: ``map_values_async(enrich, concurrency=C)`` (results per key in input
  order, offsets committed behind the lowest call in flight);
- faust: the same call in an agent with ``concurrency=C`` (``await out.send``);
- Quix Streams: the same call, blocking, in ``sdf.apply`` (it has no async, and
  processes one record at a time).

C is 1, 16 and 128. headrace and faust run C calls at once in one process over a
one-partition input (one task), whose ideal rate is C calls per 10 ms (C x 100
records/s); each run gets about four ideal seconds of input. Quix's way to C calls at
once is C replicas: at C > 1 it runs as C processes in one consumer group over a copy
of the input with C partitions (the same records, keyed alike), one call in flight
each, the clock starting once all C have joined and the group is Stable; the records
they processed while joining are left out of the rate. Levels above
``--quix-max-replicas`` (16) are not run: this machine cannot hold 128 Quix processes.
Both async frameworks use the same keep-alive HTTP client (below, on asyncio's
protocols), Quix uses ``http.client`` with keep-alive.

A run is done when the group's committed offset reaches the end of the input and the
output holds every record; the rate is records over the time from the group turning
Stable to done (``runtime_vs_peers.drive``). Reported: records/s, the fraction of the
ideal, and headrace over faust at each C.

Run: ``.venv/bin/python benchmarks/async_enrichment.py [--concurrency 1,16,128]
[--frameworks headrace,faust,quix] [--seconds 4]``. The file is also the program each
framework and the service run (``--role``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import runtime_vs_peers as peers
from bench_broker import broker_process, free_port

ROOT = peers.ROOT
DELAY_S = 0.010
CUSTOMERS = 100
COMMIT_S = 0.1
peers.PARTITIONS = 1  # one task per run: the ideal rate is per task


# -- the service and its clients -----------------------------------------------------------


class _ServiceProtocol(asyncio.Protocol):
    """Answers each request on a connection 10 ms after it arrived (keep-alive)."""

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        self.buffer = b""

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        loop = asyncio.get_running_loop()
        while b"\r\n\r\n" in self.buffer:
            head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
            customer = head.split(b" ", 2)[1].rsplit(b"/", 1)[-1]
            body = b'{"name":"%s","tier":"gold"}' % customer
            answer = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
            loop.call_later(DELAY_S, self._answer, answer)

    def _answer(self, answer: bytes) -> None:
        if not self.transport.is_closing():
            self.transport.write(answer)


def run_service(args: argparse.Namespace) -> None:
    async def serve() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(_ServiceProtocol, "127.0.0.1", int(args.port))
        async with server:
            await server.serve_forever()

    asyncio.run(serve())


class _ClientProtocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.buffer = b""
        self.waiter: asyncio.Future[bytes] | None = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if b"\r\n\r\n" not in self.buffer:
            return
        head, rest = self.buffer.split(b"\r\n\r\n", 1)
        length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
        if len(rest) >= length and self.waiter is not None:
            self.buffer = rest[length:]
            self.waiter.set_result(rest[:length])


class HttpPool:
    """Keep-alive connections, one request at a time each; as many as calls in flight."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.idle: list[_ClientProtocol] = []

    async def get(self, path: str) -> bytes:
        loop = asyncio.get_running_loop()
        if self.idle:
            conn = self.idle.pop()
        else:
            _t, conn = await loop.create_connection(_ClientProtocol, "127.0.0.1", self.port)
        conn.waiter = loop.create_future()
        conn.transport.write(b"GET %s HTTP/1.1\r\nHost: service\r\n\r\n" % path.encode())
        body = await conn.waiter
        self.idle.append(conn)
        return body


# -- the three applications ----------------------------------------------------------------


def run_headrace(args: argparse.Namespace) -> None:
    from headrace import App, Serdes, StreamsBuilder

    pool = HttpPool(int(args.port))

    async def enrich(order: dict[str, Any]) -> dict[str, Any]:
        customer = json.loads(await pool.get(f"/customer/{order['customer']}"))
        return {**order, **customer}

    builder = StreamsBuilder()
    (
        builder.stream(args.input, key_serde=Serdes.string(), value_serde=Serdes.json())
        .map_values_async(enrich, concurrency=int(args.concurrency))
        .to(args.output, key_serde=Serdes.string(), value_serde=Serdes.json())
    )
    app = App(
        args.app_id,
        builder,
        bootstrap_servers=args.bootstrap,
        state_dir=args.state_dir,
        commit_interval_ms=int(COMMIT_S * 1000),
        log_level="WARNING",
    )
    if os.environ.get("BENCH_PROFILE"):
        import cProfile

        cProfile.runctx("app.run()", globals(), {"app": app}, os.environ["BENCH_PROFILE"])
    else:
        app.run()


def run_faust(args: argparse.Namespace) -> None:
    import faust
    import orjson

    app = faust.App(
        args.app_id,
        broker=f"kafka://{args.bootstrap}",
        store="memory://",
        web_enabled=False,
        topic_partitions=1,
        broker_commit_interval=COMMIT_S,
        consumer_auto_offset_reset="earliest",
        datadir=args.state_dir,
    )
    source = app.topic(args.input, key_serializer="raw", value_serializer="raw")
    out = app.topic(args.output, key_serializer="raw", value_serializer="raw")
    pool = HttpPool(int(args.port))

    @app.agent(source, concurrency=int(args.concurrency))  # type: ignore[untyped-decorator]  # faust: untyped
    async def enrich(stream: Any) -> None:
        async for key, value in stream.items():
            order = orjson.loads(value)
            customer = orjson.loads(await pool.get(f"/customer/{order['customer']}"))
            await out.send(key=key, value=orjson.dumps({**order, **customer}))

    sys.argv = [sys.argv[0], "worker", "--loglevel", "warn", "--without-web"]
    app.main()


def run_quix(args: argparse.Namespace) -> None:
    import http.client

    from quixstreams import Application

    conn = http.client.HTTPConnection("127.0.0.1", int(args.port))

    def enrich(order: dict[str, Any]) -> dict[str, Any]:
        conn.request("GET", f"/customer/{order['customer']}")
        return {**order, **json.loads(conn.getresponse().read())}

    app = Application(
        broker_address=args.bootstrap,
        consumer_group=args.app_id,
        auto_offset_reset="earliest",
        commit_interval=COMMIT_S,
        state_dir=args.state_dir,
        loglevel="WARNING",
    )
    sdf = app.dataframe(app.topic(args.input, key_deserializer="str", value_deserializer="json"))
    sdf = sdf.apply(enrich)
    sdf.to_topic(app.topic(args.output, key_serializer="str", value_serializer="json"))
    app.run()


def run_client_only(args: argparse.Namespace) -> None:
    """The service called by bare asyncio, ``concurrency`` calls at a time and no Kafka:
    what this machine gives at that concurrency right now (printed as ``rate=``)."""
    records, concurrency = int(args.records), int(args.concurrency)

    async def client() -> float:
        pool, left = HttpPool(int(args.port)), iter(range(records))

        async def worker() -> None:
            for i in left:
                json.loads(await pool.get(f"/customer/c{i % CUSTOMERS}"))

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return records / (time.perf_counter() - started)

    print(f"rate={asyncio.run(client()):.0f}", flush=True)


ROLES = {
    "service": run_service,
    "client": run_client_only,
    "headrace": run_headrace,
    "faust": run_faust,
    "quix": run_quix,
}


# -- the harness ---------------------------------------------------------------------------


def produce(harness: peers.Harness, topic: str, records: int, *, create: bool = True) -> None:
    from confluent_kafka import Producer

    if create:
        harness.create(topic)
    producer = Producer({"bootstrap.servers": harness.bootstrap, "linger.ms": 20})
    for i in range(records):
        value = json.dumps({"customer": f"c{i % CUSTOMERS}", "amount": i}).encode()
        while True:
            try:
                producer.produce(topic, value, f"order-{i}".encode())
                break
            except BufferError:
                producer.poll(0.05)
    producer.flush(60)


def run_one(
    harness: peers.Harness,
    framework: str,
    concurrency: int,
    records: int,
    port: int,
    timeout: float,
) -> dict[str, Any]:
    name = f"{framework}-c{concurrency}"
    source, output, app_id = f"orders-{records}", f"enriched-{name}", f"bench-enrich-{name}"
    harness.create(output)
    cmd = peers.role_command(
        framework,
        __file__,
        harness,
        name,
        input_topic=source,
        output=output,
        app_id=app_id,
        port=str(port),
        concurrency=str(concurrency),
    )
    ends = harness.ends(source)
    _started, joined, done = peers.drive(
        harness,
        cmd,
        name,
        harness.workdir / f"{name}.log",
        app_id,
        source,
        ends,
        output,
        timeout,
        lambda: sum(harness.ends(output)) >= records,
    )
    outputs = sum(harness.ends(output))
    rate = records / (done - joined)
    ideal = concurrency / DELAY_S
    result = {
        "framework": framework,
        "concurrency": concurrency,
        "records": records,
        "rate": rate,
        "of_ideal": rate / ideal,
        "outputs": outputs,
        "load": os.getloadavg()[0],
    }
    print(
        f"{framework:<9} concurrency {concurrency:>4}  {records:>7,} records  "
        f"{rate:>9,.0f} rec/s  {rate / ideal:6.1%} of ideal ({ideal:,.0f})  "
        f"{outputs:,} outputs  (load {result['load']:.1f})",
        flush=True,
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--concurrency", default="1,16,128")
    parser.add_argument("--frameworks", default="headrace,faust,quix")
    parser.add_argument("--seconds", type=float, default=4.0, help="ideal seconds of input per run")
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument(
        "--quix-max-replicas",
        type=int,
        default=16,
        help="Quix runs at the levels up to this many processes (one per call in flight)",
    )
    parser.add_argument("--json", help="also write the results to this file")
    parser.add_argument("--role", choices=sorted(ROLES))
    for option in (
        "--bootstrap",
        "--input",
        "--output",
        "--app-id",
        "--state-dir",
        "--port",
        "--records",
    ):
        parser.add_argument(option)
    args, _rest = parser.parse_known_args()
    if args.role:
        ROLES[args.role](args)
        return
    frameworks = args.frameworks.split(",")
    levels = [int(c) for c in args.concurrency.split(",")]
    for framework in frameworks:
        peers.python_for(framework)
    with tempfile.TemporaryDirectory(prefix="headrace-async-") as tmp:
        workdir = pathlib.Path(tmp)
        service_port = free_port()
        service = subprocess.Popen(
            [sys.executable, __file__, "--role", "service", "--port", str(service_port)], cwd=ROOT
        )
        try:
            with broker_process(workdir, "--num-partitions", "1") as bootstrap:
                results = bench(bootstrap, service_port, args, frameworks, levels, workdir)
        finally:
            service.send_signal(signal.SIGTERM)
            service.wait(30)
    report(results)
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=2))


def bench(
    bootstrap: str,
    service_port: int,
    args: argparse.Namespace,
    frameworks: list[str],
    levels: list[int],
    workdir: pathlib.Path,
) -> list[dict[str, Any]]:
    harness = peers.ready_harness(bootstrap, 0, workdir, "bench-ready")
    results = []
    try:
        sizes = {c: max(200, int(c / DELAY_S * args.seconds)) for c in [*levels, 1]}
        for records in sorted(set(sizes.values())):
            produce(harness, f"orders-{records}", records)
        for concurrency in levels:
            results.append(client_only(service_port, concurrency, sizes[concurrency]))
            for framework in (f for f in frameworks if f != "quix"):
                results.append(
                    run_one(
                        harness,
                        framework,
                        concurrency,
                        sizes[concurrency],
                        service_port,
                        args.timeout,
                    )
                )
        if "quix" in frameworks:
            for concurrency in levels:
                if concurrency > args.quix_max_replicas:
                    print(f"quix      concurrency {concurrency:>4}  not run (replicas)", flush=True)
                elif concurrency == 1:
                    results.append(
                        run_one(harness, "quix", 1, sizes[1], service_port, args.timeout)
                    )
                else:
                    results.append(
                        run_quix_replicas(
                            harness, concurrency, sizes[concurrency], service_port, args.timeout
                        )
                    )
    finally:
        harness.close()
    return results


def run_quix_replicas(
    harness: peers.Harness, replicas: int, records: int, port: int, timeout: float
) -> dict[str, Any]:
    """Quix Streams at ``replicas`` calls in flight: as many processes in one group, each
    with one partition of a ``replicas``-partition copy of the input."""
    from confluent_kafka.admin import NewTopic

    name = f"quix-c{replicas}"
    source, output, app_id = f"orders-{records}-p{replicas}", f"enriched-{name}", f"bench-{name}"
    for future in harness.admin.create_topics([NewTopic(source, replicas, 1)]).values():
        future.result()
    produce(harness, source, records, create=False)
    harness.create(output)
    ends = _ends(harness, source, replicas)
    assert sum(ends) == records
    procs = []
    logs = [harness.workdir / f"{name}-{j}.log" for j in range(replicas)]
    started = time.perf_counter()
    try:
        for j, log_path in enumerate(logs):
            cmd = peers.role_command(
                "quix",
                __file__,
                harness,
                f"{name}-{j}",
                input_topic=source,
                output=output,
                app_id=app_id,
                port=str(port),
                concurrency="1",
            )
            with open(log_path, "wb") as log:
                procs.append(
                    subprocess.Popen(
                        cmd,
                        stdout=log,
                        stderr=log,
                        cwd=ROOT,
                        env={**os.environ, "PYTHONWARNINGS": "ignore"},
                    )
                )
        joined = before = None
        while True:
            time.sleep(0.1)
            for proc, log_path in zip(procs, logs, strict=True):
                if proc.poll() is not None:
                    raise RuntimeError(
                        f"{name} exited with {proc.returncode}:\n{log_path.read_text()[-4000:]}"
                    )
            if time.perf_counter() - started > timeout:
                raise RuntimeError(f"{name} did not finish within {timeout:.0f}s")
            committed = _committed(harness, app_id, source, replicas)
            if joined is None:
                if _members_when_stable(harness, app_id) == replicas:
                    joined, before = time.perf_counter(), sum(committed)
                continue
            if committed == ends and sum(harness.ends(output)) >= records:
                done = time.perf_counter()
                break
    finally:
        for proc in procs:
            peers.stop(proc)
    assert joined is not None and before is not None
    outputs = sum(harness.ends(output))
    rate = (records - before) / (done - joined)
    ideal = replicas / DELAY_S
    result = {
        "framework": "quix",
        "concurrency": replicas,
        "records": records,
        "rate": rate,
        "of_ideal": rate / ideal,
        "outputs": outputs,
        "committed_before_clock": before,
        "load": os.getloadavg()[0],
    }
    print(
        f"{'quix':<9} concurrency {replicas:>4}  {records:>7,} records  "
        f"{rate:>9,.0f} rec/s  {rate / ideal:6.1%} of ideal ({ideal:,.0f})  "
        f"{outputs:,} outputs, {before:,} committed before the clock, {replicas} processes  "
        f"(load {result['load']:.1f})",
        flush=True,
    )
    return result


def _ends(harness: peers.Harness, topic: str, partitions: int) -> list[int]:
    from confluent_kafka import TopicPartition

    return [
        harness.watcher.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
        for p in range(partitions)
    ]


def _committed(harness: peers.Harness, group: str, topic: str, partitions: int) -> list[int]:
    from confluent_kafka import Consumer, TopicPartition

    reader = Consumer({"bootstrap.servers": harness.bootstrap, "group.id": group})
    try:
        got = reader.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
    finally:
        reader.close()
    return [max(tp.offset, 0) for tp in got]


def _members_when_stable(harness: peers.Harness, group: str) -> int:
    """How many members ``group`` has, or 0 while it is not Stable."""
    from confluent_kafka import ConsumerGroupState

    try:
        described = harness.admin.describe_consumer_groups([group])[group].result(10)
    except Exception:
        return 0
    return len(described.members) if described.state == ConsumerGroupState.STABLE else 0


def client_only(port: int, concurrency: int, records: int) -> dict[str, Any]:
    """The same calls from a bare asyncio client, no Kafka: the machine's ceiling now."""
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--role",
            "client",
            "--port",
            str(port),
            "--concurrency",
            str(concurrency),
            "--records",
            str(records),
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout
    rate = float(out.split("rate=")[1])
    ideal = concurrency / DELAY_S
    print(
        f"{'client':<9} concurrency {concurrency:>4}  {records:>7,} calls    "
        f"{rate:>9,.0f} calls/s {rate / ideal:6.1%} of ideal (no Kafka: the machine's ceiling)",
        flush=True,
    )
    return {
        "framework": "client",
        "concurrency": concurrency,
        "records": records,
        "rate": rate,
        "of_ideal": rate / ideal,
    }


def report(results: list[dict[str, Any]]) -> None:
    by = {(r["framework"], r["concurrency"]): r for r in results}
    for (framework, concurrency), ours in sorted(by.items()):
        if framework != "headrace":
            continue
        ceiling = by.get(("client", concurrency))
        if ceiling is not None:
            print(
                f"concurrency {concurrency:>4}: headrace / bare client "
                f"{ours['rate'] / ceiling['rate']:6.2f}",
                flush=True,
            )
        for peer in ("faust", "quix"):
            theirs = by.get((peer, concurrency))
            if theirs is not None:
                print(
                    f"concurrency {concurrency:>4}: headrace / {peer:<5} "
                    f"{ours['rate'] / theirs['rate']:6.1f}x",
                    flush=True,
                )


if __name__ == "__main__":
    main()

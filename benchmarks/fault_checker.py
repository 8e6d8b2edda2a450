"""Fault injection in the style of Jepsen's Kafka test: a random workload against the
broker while it is killed, paused and has torn tails written into its logs, then a
check of everything that was acknowledged.

    .venv/bin/python benchmarks/fault_checker.py [--seconds 1800] [--seed N]

Workload (librdkafka clients, confluent-kafka), on a 3-partition topic:
- idempotent producers send values "<producer>-<n>" with n increasing per producer;
  a value counts as acknowledged when its delivery report says so;
- a transactional producer writes transactions of a few records each, committing or
  aborting at random; a transaction counts as committed (or aborted) only when
  commit_transaction (abort_transaction) returned;
- group consumers in two groups, one read_committed and one read_uncommitted, commit
  what they consume and are replaced at random, with or without a last commit, so the
  groups rebalance all the time (benchmarks/fault_groups.py).
Faults, one every few seconds, at random: SIGKILL and restart; SIGSTOP for up to 3 s,
then SIGCONT; SIGKILL, then garbage appended to a random partition's active segment
(a torn tail), then restart; with ``--tmpfs-mib N`` (root only: it mounts a tmpfs of
N MiB as the data directory) also a full disk: a file fills the free space for up to
3 s, then goes.
At the end, with the broker up, a read_committed and a read_uncommitted consumer read
every partition from the start. Anomalies reported:
- lost: an acknowledged value (or a committed transaction's value) nobody reads;
- duplicate: a value read twice;
- reordered: one producer's values out of order within a partition;
- aborted read: an aborted transaction's value under read_committed;
- uncommitted read: under read_committed, a transactional value of a transaction not
  known to have committed (its outcome unknown counts as neither);
- non-monotonic offsets: offsets not strictly increasing within a partition;
- poll skip: a group consumer that passes over a record within its hold of a
  partition, or that starts a partition past a record no commit covered; and, for
  group consumers, non-monotonic polls and phantom reads (see fault_groups.py).
Exit status 1 if there is any anomaly.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from brokerproc import BrokerProcess
from fault_groups import GroupHistory, group_consumer, poll_skips

TOPIC = "jepsen"
PARTITIONS = 3


@dataclass
class History:
    acked: set[str] = field(default_factory=set)
    committed: set[str] = field(default_factory=set)
    aborted: set[str] = field(default_factory=set)
    transactional: set[str] = field(default_factory=set)
    faults: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    lock: threading.Lock = field(default_factory=threading.Lock)


def idempotent_producer(bootstrap: str, name: str, history: History, stop: threading.Event) -> None:
    from confluent_kafka import KafkaException, Producer

    def report(err: object, msg: object) -> None:
        if err is None:
            with history.lock:
                history.acked.add(msg.value().decode())  # type: ignore[attr-defined]

    n = 0
    generation = 0
    while not stop.is_set():
        producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "message.timeout.ms": 20_000,
                "linger.ms": 2,
            }
        )
        generation += 1
        try:
            while not stop.is_set():
                value = f"{name}.{generation}-{n}"
                n += 1
                producer.produce(TOPIC, value=value.encode(), key=name.encode(), on_delivery=report)
                producer.poll(0)
                time.sleep(0.002)
        except (KafkaException, BufferError):
            pass  # a fatal idempotence error: start a new producer (a new id)
        finally:
            producer.flush(30)


def transactional_producer(
    bootstrap: str, history: History, stop: threading.Event, rng: random.Random
) -> None:
    from confluent_kafka import KafkaException, Producer

    txn = 0
    while not stop.is_set():
        producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "transactional.id": "jepsen-txn",
                "transaction.timeout.ms": 30_000,
                "message.timeout.ms": 20_000,
            }
        )
        try:
            producer.init_transactions(30)
            while not stop.is_set():
                values = [f"txn{txn}-{i}" for i in range(rng.randint(1, 5))]
                txn += 1
                with history.lock:
                    history.transactional.update(values)
                producer.begin_transaction()
                for value in values:
                    producer.produce(
                        TOPIC, value=value.encode(), partition=rng.randrange(PARTITIONS)
                    )
                producer.flush(30)  # so that aborted records do reach the log
                commit = rng.random() < 0.7
                try:
                    if commit:
                        producer.commit_transaction(30)
                    else:
                        producer.abort_transaction(30)
                except KafkaException as exc:
                    if exc.args[0].txn_requires_abort():
                        producer.abort_transaction(30)
                        with history.lock:
                            history.aborted.update(values)
                        continue
                    raise
                with history.lock:
                    (history.committed if commit else history.aborted).update(values)
        except KafkaException:
            time.sleep(0.5)  # fatal or retriable at init: a new producer fences the old


def torn_tail(data_dir: Path, rng: random.Random) -> None:
    partitions = sorted(data_dir.glob(f"{TOPIC}-*"))
    if not partitions:
        return
    segments = sorted(rng.choice(partitions).glob("*.log"))
    if segments:
        with open(segments[-1], "ab") as f:
            f.write(os.urandom(rng.randint(1, 300)))


def fill_disk(directory: Path, rng: random.Random) -> None:
    """Fill the file system of ``directory``, hold it full a moment, free it again."""
    filler = directory / "filler"
    try:
        with open(filler, "wb") as f:
            while True:
                f.write(bytes(1 << 16))
    except OSError:
        pass  # full
    time.sleep(rng.uniform(0.5, 3))
    filler.unlink()


def inject_faults(
    broker: BrokerProcess,
    history: History,
    stop: threading.Event,
    rng: random.Random,
    every_s: float,
    disk_full: bool,
) -> None:
    kinds = ["kill", "pause", "torn-tail"] + (["disk-full"] if disk_full else [])
    while not stop.wait(rng.uniform(every_s / 2, every_s * 1.5)):
        kind = rng.choice(kinds)
        history.faults[kind] += 1
        assert broker.proc is not None
        if kind == "disk-full":
            fill_disk(broker.data_dir.parent, rng)
            continue
        if kind == "pause":
            broker.proc.send_signal(signal.SIGSTOP)
            time.sleep(rng.uniform(0.2, 3))
            broker.proc.send_signal(signal.SIGCONT)
            continue
        broker.kill()
        if kind == "torn-tail":
            torn_tail(broker.data_dir, rng)
        broker.start(timeout=60)


def read_all(bootstrap: str, isolation: str) -> dict[int, list[tuple[int, str]]]:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{isolation}",
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    consumer.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    seen: dict[int, list[tuple[int, str]]] = defaultdict(list)
    idle_since = time.monotonic()
    while time.monotonic() - idle_since < 5:
        messages = consumer.consume(10_000, 0.5)
        for message in messages:
            value, offset, partition = message.value(), message.offset(), message.partition()
            if message.error() is None and value is not None and offset is not None:
                assert partition is not None
                seen[partition].append((offset, value.decode()))
        if messages:
            idle_since = time.monotonic()
    consumer.close()
    return seen


def check(
    history: History,
    committed_read: dict[int, list[tuple[int, str]]],
    uncommitted_read: dict[int, list[tuple[int, str]]],
) -> dict[str, list[str]]:
    anomalies: dict[str, list[str]] = defaultdict(list)
    for isolation, seen in (
        ("read_committed", committed_read),
        ("read_uncommitted", uncommitted_read),
    ):
        values = [v for records in seen.values() for _, v in records]
        counts: dict[str, int] = defaultdict(int)
        for value in values:
            counts[value] += 1
        anomalies["duplicate"] += [f"{isolation}: {v}" for v, c in counts.items() if c > 1]
        for partition, records in seen.items():
            offsets = [o for o, _ in records]
            if any(b <= a for a, b in pairwise(offsets)):
                anomalies["non-monotonic offsets"].append(f"{isolation}: partition {partition}")
            last: dict[str, int] = {}
            for _, value in records:
                if value.startswith("txn"):
                    continue
                producer, n = value.rsplit("-", 1)
                if int(n) <= last.get(producer, -1):
                    anomalies["reordered"].append(
                        f"{isolation}: {value} after {producer}-{last[producer]}"
                    )
                last[producer] = int(n)
        read = set(values)
        anomalies["lost"] += [f"{isolation}: {v}" for v in sorted(history.acked - read)]
        anomalies["lost"] += [f"{isolation}: {v}" for v in sorted(history.committed - read)]
        if isolation == "read_committed":
            anomalies["aborted read"] += sorted(read & history.aborted)
            unknown = history.transactional - history.committed - history.aborted
            anomalies["uncommitted read"] += sorted(
                v for v in read & history.transactional - history.committed if v not in unknown
            )
    return {kind: found for kind, found in anomalies.items() if found}


@contextmanager
def data_disk(tmpfs_mib: int | None) -> Iterator[Path]:
    """A temporary directory, on a tmpfs of its own when a size is given."""
    with tempfile.TemporaryDirectory(prefix="headrace-jepsen-") as tmp:
        if tmpfs_mib is None:
            yield Path(tmp)
            return
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={tmpfs_mib}m", "tmpfs", tmp], check=True
        )
        try:
            yield Path(tmp)
        finally:
            subprocess.run(["umount", tmp], check=True)


def run(
    seconds: float,
    seed: int,
    every_s: float,
    tmpfs_mib: int | None = None,
    producers: int = 2,
    group_consumers: int = 2,
) -> int:
    from confluent_kafka.admin import AdminClient, NewTopic

    rng = random.Random(seed)
    history = History()
    groups = [
        GroupHistory("jepsen-rc", "read_committed"),
        GroupHistory("jepsen-ru", "read_uncommitted"),
    ]
    with data_disk(tmpfs_mib) as disk, BrokerProcess(disk / "data") as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(30)
        stop = threading.Event()
        workers = [
            threading.Thread(
                target=idempotent_producer, args=(broker.bootstrap, f"p{i}", history, stop)
            )
            for i in range(producers)
        ]
        workers.append(
            threading.Thread(
                target=transactional_producer,
                args=(broker.bootstrap, history, stop, random.Random(seed + 1)),
            )
        )
        workers += [
            threading.Thread(
                target=group_consumer,
                args=(broker.bootstrap, TOPIC, group, stop, random.Random(seed + 2 + i)),
            )
            for i, group in enumerate(groups * group_consumers)
        ]
        for worker in workers:
            worker.start()
        faults = threading.Thread(
            target=inject_faults,
            args=(broker, history, stop, rng, every_s, tmpfs_mib is not None),
        )
        faults.start()
        time.sleep(seconds)
        stop.set()
        faults.join()
        for worker in workers:
            worker.join(120)
        committed = read_all(broker.bootstrap, "read_committed")
        uncommitted = read_all(broker.bootstrap, "read_uncommitted")
        anomalies = check(history, committed, uncommitted)
        for group in groups:
            log = committed if group.isolation == "read_committed" else uncommitted
            for kind, found in poll_skips(group, log).items():
                anomalies.setdefault(kind, []).extend(found)
        broker_log = broker.log_path.read_text()
    print(
        f"{seconds:.0f} s, seed {seed}: faults {dict(history.faults)}; acknowledged "
        f"{len(history.acked)}, committed {len(history.committed)}, aborted "
        f"{len(history.aborted)}; read_committed {sum(map(len, committed.values()))} "
        f"records, read_uncommitted {sum(map(len, uncommitted.values()))}"
    )
    print(
        "group consumers: "
        + "; ".join(
            f"{g.group} read {len(g.consumed)} records in {g.sessions} sessions, "
            f"{len(g.commits)} commits tried, {g.restarts} consumers replaced"
            for g in groups
        )
    )
    print(
        f"recovery cuts logged: {broker_log.count('recovery of')}; disk errors logged: "
        f"{broker_log.count('logged once per cause')}; read_uncommitted saw "
        f"{len(history.aborted & {v for r in uncommitted.values() for _, v in r})} aborted"
    )
    if not anomalies:
        print("anomalies: none")
        return 0
    for kind, found in anomalies.items():
        print(f"anomaly {kind}: {len(found)}, e.g. {found[:5]}")
    return 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1800)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--fault-every", type=float, default=5.0, metavar="SECONDS")
    parser.add_argument(
        "--tmpfs-mib",
        type=int,
        metavar="MIB",
        help="data on a tmpfs of this size, and full-disk faults (root)",
    )
    parser.add_argument(
        "--group-consumers", type=int, default=2, metavar="N", help="consumers in each group"
    )
    args = parser.parse_args()
    sys.exit(
        run(
            args.seconds,
            args.seed,
            args.fault_every,
            args.tmpfs_mib,
            group_consumers=args.group_consumers,
        )
    )


if __name__ == "__main__":
    main()

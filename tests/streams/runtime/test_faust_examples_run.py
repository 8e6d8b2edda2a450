"""The faust examples, ported, run under ``headrace run`` against the built-in broker."""

from __future__ import annotations

import asyncio
import json
import struct
from pathlib import Path

import pytest
from rtprocs import Cluster, Instance, create_topics, produce, read_until

from headrace.examples import faust_enrichment, faust_word_count

pytestmark = pytest.mark.slow


def _start(
    instances: list[Instance], target: str, app_id: str, bootstrap: str, tmp_path: Path
) -> Instance:
    inst = Instance(target, app_id, bootstrap, tmp_path / app_id, app_id).start()
    instances.append(inst)
    return inst


async def test_faust_word_count_runs_as_a_service(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    bootstrap = cluster.bootstrap
    wc = faust_word_count
    await create_topics(bootstrap, wc.POSTS, wc.WORDS, wc.COUNTS)
    inst = _start(
        instances, "headrace.examples.faust_word_count:app", "word-count", bootstrap, tmp_path
    )
    await asyncio.to_thread(inst.wait_for, "tasks=0_", 40)
    posts = ["the quick fox", "the lazy dog", "the end"] * 10
    await produce(
        bootstrap, wc.POSTS, [(f"p{i}".encode(), p.encode()) for i, p in enumerate(posts)]
    )
    want = {"the": 30, "quick": 10, "fox": 10, "lazy": 10, "dog": 10, "end": 10}

    def latest(got: list[tuple[bytes, bytes]]) -> dict[str, int]:
        return {k.decode(): struct.unpack(">q", v)[0] for k, v in got}

    got = await read_until(bootstrap, wc.COUNTS, lambda got: latest(got) == want)
    assert latest(got) == want
    assert inst.stop() == 0


async def test_faust_enrichment_runs_as_a_service(
    cluster: Cluster, instances: list[Instance], tmp_path: Path
) -> None:
    bootstrap = cluster.bootstrap
    fe = faust_enrichment
    await create_topics(bootstrap, fe.ORDERS, fe.ENRICHED)
    inst = _start(
        instances, "headrace.examples.faust_enrichment:app", "order-enrichment", bootstrap, tmp_path
    )
    await asyncio.to_thread(inst.wait_for, "tasks=0_", 40)
    orders = [
        (f"o{i % 7}".encode(), json.dumps({"customer": f"c{i % 3}", "amount": i}).encode())
        for i in range(200)
    ]
    await produce(bootstrap, fe.ORDERS, orders)
    got = await read_until(bootstrap, fe.ENRICHED, lambda got: len(got) >= 200)
    assert len(got) == 200
    values = [json.loads(v) for _k, v in got]
    assert sorted(v["amount"] for v in values) == list(range(200))
    assert {v["name"] for v in values if v["customer"] == "c1"} == {"Ada"}
    for key in {k for k, _v in orders}:  # per order id, in the order they were placed
        amounts = [json.loads(v)["amount"] for k, v in got if k == key]
        assert amounts == sorted(amounts)
    assert inst.stop() == 0

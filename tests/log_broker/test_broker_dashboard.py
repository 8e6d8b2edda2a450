"""The Grafana dashboard shipped for the broker asks only for metrics a running broker
exports, and shows every family it exports (see tests/streams/runtime/test_dashboards.py
for the applications' one)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

DASHBOARD = Path(__file__).resolve().parents[2] / "grafana" / "headrace-broker.json"
SUFFIXES = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "gauge": ("",)}


def _queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]


async def test_dashboard_matches_the_exported_metrics(broker: Any) -> None:
    families = {
        f.name: f.type
        for f in text_string_to_metric_families(broker.metrics.exposition().decode())
        if not f.name.endswith("_created")
    }  # the client library's creation times
    exported = {name + suffix for name, kind in families.items() for suffix in SUFFIXES[kind]}
    shown = set()
    for expr in _queries():
        named = set(re.findall(r"\bheadrace_[a-z_]+", expr))
        assert named and named <= exported, f"{expr}: {sorted(named - exported)} not exported"
        shown |= named
    assert not {f for f in families if not any(name.startswith(f) for name in shown)}

"""The Grafana dashboard shipped for applications asks only for metrics an App exports.

A renamed metric would leave a panel empty without any error; this test reads every
query of ``grafana/headrace-app.json`` and checks each metric it names against the
families an App's registry holds (as they appear in the exposition: ``_total`` on
counters, ``_bucket``/``_count``/``_sum`` on histograms and summaries)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from headrace.streams.runtime._metrics import AppMetrics

DASHBOARD = Path(__file__).resolve().parents[3] / "grafana" / "headrace-app.json"
SUFFIXES = {
    "counter": ("_total",),
    "histogram": ("_bucket", "_count", "_sum"),
    "summary": ("_count", "_sum"),
    "gauge": ("",),
}


def _exported_names() -> set[str]:
    names: set[str] = set()
    for family in AppMetrics("dashboards").registry.collect():
        names.update(family.name + suffix for suffix in SUFFIXES[family.type])
    return names


def _queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]


def test_every_query_names_exported_metrics() -> None:
    exported = _exported_names()
    queries = _queries()
    assert queries
    for expr in queries:
        named = set(re.findall(r"\bheadrace_[a-z_]+", expr))
        assert named, expr
        assert named <= exported, f"{expr}: {sorted(named - exported)} not exported"


def test_every_family_has_a_panel() -> None:
    """A metric an App exports but no panel shows is one an operator never sees."""
    shown = {name for expr in _queries() for name in re.findall(r"\bheadrace_[a-z_]+", expr)}
    families = {family.name for family in AppMetrics("dashboards").registry.collect()}
    unshown = {f for f in families if not any(name.startswith(f) for name in shown)}
    assert not unshown

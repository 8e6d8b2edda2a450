"""The table writer's freshness as Prometheus text, beside the broker's own metrics.

One sample per table topic of each gauge::

    headrace_table_seconds_behind{topic="orders"} 1.2   (absent before a first commit)
    headrace_table_offsets_behind{topic="orders"} 0
    headrace_table_rows_committed_total{topic="orders"} 5000
"""

from __future__ import annotations

from collections.abc import Mapping

from ._topic_writer import Freshness

_HELP = (
    ("seconds_behind", "gauge", "now minus the timestamp of the newest record in the table"),
    ("offsets_behind", "gauge", "offsets of the topic's partitions the table does not cover"),
    ("rows_committed_total", "counter", "rows the writer committed since it started"),
)


def prometheus_text(freshness: Mapping[str, Freshness]) -> bytes:
    """Prometheus text exposition of ``freshness`` (topic -> Freshness).

    >>> print(prometheus_text({"a": Freshness(None, 3, 0)}).decode().splitlines()[4])
    headrace_table_offsets_behind{topic="a"} 3
    """
    lines = []
    for name, kind, help_text in _HELP:
        lines += [
            f"# HELP headrace_table_{name} {help_text}",
            f"# TYPE headrace_table_{name} {kind}",
        ]
        for topic, fresh in sorted(freshness.items()):
            value = {
                "seconds_behind": fresh.seconds_behind,
                "offsets_behind": fresh.offsets_behind,
                "rows_committed_total": fresh.rows_committed,
            }[name]
            if value is not None:
                label = topic.replace("\\", "\\\\").replace('"', '\\"')
                lines.append(f'headrace_table_{name}{{topic="{label}"}} {value}')
    return ("\n".join(lines) + "\n").encode()

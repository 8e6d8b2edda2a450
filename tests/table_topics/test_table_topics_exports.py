"""headrace.table_topics' public names, pinned."""

from __future__ import annotations

import headrace.table_topics as table_topics


def test_the_public_names_are_pinned() -> None:
    assert sorted(table_topics.__all__) == [
        "Freshness",
        "TableSettings",
        "TableWriter",
        "TopicRecord",
        "TopicWriter",
        "prometheus_text",
        "table_path",
    ]
    for name in table_topics.__all__:
        assert getattr(table_topics, name).__module__.startswith("headrace.table_topics._")

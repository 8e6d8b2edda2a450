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
    # each comes from a module of the package, but the layout its tables share with the
    # export job and the console
    for name in table_topics.__all__:
        origin = getattr(table_topics, name).__module__
        assert origin.startswith("headrace.table_topics._") or (
            origin == "headrace.base.table_layout"
        ), (name, origin)

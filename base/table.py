"""Rows printed as an aligned plain-text table: one renderer for every command.

Two looks share it. The client commands (``headrace topics list`` and the like) print
``PLAIN``: columns left-aligned, cells as ``str`` gives them, nothing under the header,
the way Kafka's own tools print. Query results (``headrace spark sql``, the demo's
report) print ``QUERY_RESULT``: a rule under the header, numbers to the right, ``NULL``
for a missing value, the way SQL shells print.

>>> print(render_table(("TOPIC", "PARTITIONS"), [("orders", 3), ("payments", 12)]))
TOPIC     PARTITIONS
orders    3
payments  12
>>> print(render_table(("page", "views"), [("/home", 1200), ("/x", None)], QUERY_RESULT))
page   views
-----  -----
/home   1200
/x      NULL
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any


def query_cell(value: Any) -> str:
    """A value as a query result shows it: ``NULL``, bytes as text, floats in 6 digits."""
    if value is None:
        return "NULL"
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", "backslashreplace")
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


@dataclass(frozen=True, slots=True)
class TableStyle:
    """How a table looks: each cell's text, numbers' alignment, a rule under the header."""

    cell: Callable[[Any], str] = str
    # a column whose every non-null value is a number (not a bool) is aligned right
    numbers_right: bool = False
    rule: bool = False


PLAIN = TableStyle()
QUERY_RESULT = TableStyle(cell=query_cell, numbers_right=True, rule=True)


def render_table(
    headers: Sequence[str], rows: Iterable[Sequence[Any]], style: TableStyle = PLAIN
) -> str:
    """``rows`` under ``headers``, columns two spaces apart, no trailing blanks on a line."""
    values = [tuple(row) for row in rows]
    cells = [[style.cell(v) for v in row] for row in values]
    widths = [len(h) for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    right = [style.numbers_right and _numeric(values, i) for i in range(len(headers))]

    def line(texts: Sequence[str]) -> str:
        return "  ".join(
            t.rjust(w) if r else t.ljust(w) for t, w, r in zip(texts, widths, right, strict=True)
        ).rstrip()

    lines = [line(headers)]
    if style.rule:
        lines.append("  ".join("-" * w for w in widths))
    lines += [line(row) for row in cells]
    return "\n".join(lines)


def _numeric(rows: Sequence[Sequence[Any]], column: int) -> bool:
    """Are the column's values numbers (nulls aside)? A table with no rows has none."""
    return bool(rows) and all(
        isinstance(row[column], int | float) and not isinstance(row[column], bool)
        for row in rows
        if row[column] is not None
    )

"""The few HTML pieces the older pages are built of (the newer ones are templates:
``_templates.py``). Values are escaped here, so the views pass data, never markup they
did not build themselves."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from typing import Any


class Markup(str):
    """Text that is already HTML: :func:`cell` and the templates pass it through."""

    def __html__(self) -> str:  # what Jinja2 (markupsafe) asks markup for
        return str(self)


def cell(value: Any) -> str:
    if isinstance(value, Markup):
        return value
    if value is None:
        return '<span class="none">-</span>'
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return f'<span class="num">{value:,}</span>'
    return escape(str(value))


def link(href: str, text: Any) -> Markup:
    return Markup(f'<a href="{escape(href, quote=True)}">{escape(str(text))}</a>')


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, table_id: str = "") -> Markup:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{cell(v)}</td>" for v in row) + "</tr>" for row in rows)
    ident = f' id="{escape(table_id, quote=True)}"' if table_id else ""
    if not body:
        body = f'<tr><td colspan="{len(headers)}" class="none">none</td></tr>'
    return Markup(f"<table{ident}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")


def error_box(message: str) -> Markup:
    return Markup(f'<p class="error">{escape(message)}</p>')

"""The page frame and the few HTML pieces every page is made of. Values are escaped
here, so the views pass data, never markup they did not build themselves."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

NAV = (
    ("/", "Overview"),
    ("/brokers", "Brokers"),
    ("/topics", "Topics"),
    ("/groups", "Consumer groups"),
    ("/transactions", "Transactions"),
    ("/apps", "Applications"),
)


class Markup(str):
    """Text that is already HTML: :func:`cell` passes it through unescaped."""


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


def page(
    title: str, body: str, *, active: str, cluster: str, refresh: bool = True, admin: bool = False
) -> str:
    nav = "".join(
        f'<a href="{href}"{" class=active" if href == active else ""}>{escape(name)}</a>'
        for href, name in NAV
    )
    mode = (
        '<span class="mode admin">admin mode</span>'
        if admin
        else '<span class="mode">read-only</span>'
    )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{escape(title)} · headrace console</title>"
        '<meta name=viewport content="width=device-width, initial-scale=1">'
        '<link rel=stylesheet href="/static/console.css"><script defer src="/static/console.js"></script>'
        f'</head><body><header><span class="brand">headrace console</span><nav>{nav}</nav>'
        f'<span class="cluster">{escape(cluster)}</span>{mode}</header>'
        f'<main data-refresh="{5 if refresh else 0}"><h1>{escape(title)}</h1>{body}</main></body></html>'
    )


def fragment(title: str, body: str) -> str:
    """What a live refresh swaps into ``<main>``: the page without its frame."""
    return f"<h1>{escape(title)}</h1>{body}"


def error_box(message: str) -> Markup:
    return Markup(f'<p class="error">{escape(message)}</p>')

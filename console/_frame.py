"""The frame every page sits in: the navigation, the cluster's address, the mode, and
the page's ``<main>`` (which a live refresh fetches alone, as a fragment)."""

from __future__ import annotations

from ._html import Markup
from ._templates import render

NAV = (
    ("/", "Overview"),
    ("/brokers", "Brokers"),
    ("/topics", "Topics"),
    ("/groups", "Consumer groups"),
    ("/transactions", "Transactions"),
    ("/schemas", "Schemas"),
    ("/users", "Users"),
    ("/acls", "ACLs"),
    ("/charts", "Charts"),
    ("/apps", "Applications"),
)


def page(
    title: str, body: str, *, active: str, cluster: str, refresh: bool = True, admin: bool = False
) -> str:
    """A whole page; ``body`` is HTML the views built (``Markup`` or escaped text)."""
    return str(
        render(
            "frame.html",
            title=title,
            body=Markup(body),
            nav=NAV,
            active=active,
            cluster=cluster,
            refresh=5 if refresh else 0,
            admin=admin,
        )
    )


def fragment(title: str, body: str) -> str:
    """What a live refresh swaps into ``<main>``: the page without its frame."""
    return str(render("main.html", title=title, body=Markup(body)))

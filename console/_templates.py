"""The console's pages as Jinja2 templates (``console/templates/``), escaping by default.

Every value a template prints is escaped unless it is markup already: Jinja2's own, or
``_html.Markup`` (it has ``__html__``), which only ``_html.py`` and the SVG drawings
build. So a topic, subject or user name is text on every page without anyone having
to remember to escape it.

Numbers are printed as they come; the ``num`` filter adds thousands separators, for
quantities only (records, bytes, lag), never for ports, ids or partition numbers.
Jinja2 is imported on the first page, not when the ``headrace`` command starts.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._html import Markup

if TYPE_CHECKING:
    import jinja2

TEMPLATES = Path(__file__).parent / "templates"


def render(name: str, **context: Any) -> Markup:
    """The template ``name`` filled with ``context``: HTML, safe to put in a page."""
    return Markup(_environment().get_template(name).render(**context))


def quantity(value: Any) -> str:
    """A count or size with thousands separators; anything else as text.

    >>> quantity(1234567), quantity(2.0), quantity(None), quantity("n/a")
    ('1,234,567', '2', '-', 'n/a')
    """
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.1f}"
    return "-" if value is None else str(value)


def utc_time(ms: int | None) -> str:
    """Epoch milliseconds as a UTC time to the millisecond.

    >>> utc_time(1_700_000_000_123), utc_time(-1)
    ('2023-11-14 22:13:20.123Z', '-')
    """
    if ms is None or ms < 0:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


@cache
def _environment() -> jinja2.Environment:
    from urllib.parse import quote

    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,  # a misspelt name fails the page, not blanks it
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = quantity
    env.filters["utc"] = utc_time
    env.filters["path"] = lambda text: quote(str(text), safe="")  # one path segment
    return env

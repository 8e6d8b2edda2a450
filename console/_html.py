"""Markup: text that is HTML already, which the templates pass through unescaped.

Only code that escapes what it puts in builds one: the templates (``_templates.py``),
the SVG drawings (``_graph.py``, ``_chart_svg.py``) and :func:`error_box`. Everything
else a page shows is data, escaped where a template prints it."""

from __future__ import annotations

from html import escape


class Markup(str):
    """Text that is already HTML: Jinja2 prints it as it is."""

    def __html__(self) -> str:  # what Jinja2 (markupsafe) asks markup for
        return str(self)


def error_box(message: str) -> Markup:
    return Markup(f'<p class="error">{escape(message)}</p>')

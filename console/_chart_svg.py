"""A time series drawn as an inline SVG line chart: no script, no fonts or files from
elsewhere (the console's pages load nothing but their own CSS and JavaScript).

The chart carries its figures for whoever reads the page without looking at it:
``data-last`` (the newest value) and ``data-max``, and a ``<title>`` per point.
"""

from __future__ import annotations

from html import escape

from ._html import Markup
from ._templates import quantity, utc_time

WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 560, 150, 56, 20, 8


def line_chart(chart_id: str, label: str, unit: str, points: list[tuple[float, float]]) -> Markup:
    """``points``: (epoch seconds, value), oldest first."""
    ident = escape(chart_id, quote=True)
    if len(points) < 2:
        return Markup(
            f'<figure class="chart" id="{ident}" data-points="{len(points)}">'
            f"<figcaption>{escape(label)}</figcaption>"
            '<p class="none">not enough samples yet: a chart needs two</p></figure>'
        )
    first, last = points[0][0], points[-1][0]
    top = max(value for _, value in points) or 1.0
    span = (last - first) or 1.0
    plot_w, plot_h = WIDTH - LEFT - 4, HEIGHT - BOTTOM - TOP

    def xy(at: float, value: float) -> tuple[float, float]:
        return LEFT + (at - first) / span * plot_w, TOP + plot_h - value / top * plot_h

    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(at, v) for at, v in points))
    dots = "".join(
        f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2"><title>{escape(utc_time(int(at * 1000)))}: '
        f"{escape(quantity(round(v, 1)))} {escape(unit)}</title></circle>"
        for at, v in points
        for x, y in [xy(at, v)]
    )
    newest = round(points[-1][1], 3)
    return Markup(
        f'<figure class="chart" id="{ident}" data-points="{len(points)}" data-last="{newest:g}" '
        f'data-max="{round(top, 3):g}"><figcaption>{escape(label)}: '
        f"<b>{escape(quantity(round(points[-1][1], 1)))}</b> {escape(unit)} now</figcaption>"
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="{escape(label, quote=True)}">'
        f'<line class="axis" x1="{LEFT}" y1="{TOP + plot_h}" x2="{WIDTH - 4}" y2="{TOP + plot_h}"/>'
        f'<line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}"/>'
        f'<text x="{LEFT - 6}" y="{TOP + 10}" text-anchor="end">{escape(quantity(round(top, 1)))}</text>'
        f'<text x="{LEFT - 6}" y="{TOP + plot_h}" text-anchor="end">0</text>'
        f'<text x="{LEFT}" y="{HEIGHT - 4}">{span:.0f} s ago</text>'
        f'<text x="{WIDTH - 4}" y="{HEIGHT - 4}" text-anchor="end">now</text>'
        f'<polyline class="series" points="{line}"/>{dots}</svg></figure>'
    )

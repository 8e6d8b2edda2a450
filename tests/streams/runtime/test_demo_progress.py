"""``headrace demo`` on a terminal shows its phases (events generated, results in) as
progress bars, with its own lines printed whole above them; piped, it shows none."""

from __future__ import annotations

import pytest
from ptyrun import run_on_terminal, run_piped

pytestmark = pytest.mark.slow
QUICK = [
    "demo",
    "--no-spark",
    "--events",
    "1200",
    "--minutes",
    "2",
    "--pause",
    "0.2",
    "--console-listen",
    "off",
]


def _visible(shown: str) -> list[str]:
    """The lines a terminal ends up showing: each from its last carriage return, with
    the clear-line sequence done."""
    return [line.rsplit("\r", 1)[-1].replace("\x1b[K", "") for line in shown.split("\r\n")]


def _bar_finished(shown: str, label: str) -> bool:
    return any(
        line.startswith(f"{label} [{'#' * 30}]") and " 100% " in line for line in _visible(shown)
    )


def test_phases_show_as_bars_on_a_terminal() -> None:
    code, shown = run_on_terminal(QUICK)
    assert code == 0, shown
    assert _bar_finished(shown, "generating") and _bar_finished(shown, "results"), repr(shown)
    lines = _visible(shown)
    assert "[generate] minute 1/2: 600 page views, 60 sensor readings" in lines, lines
    assert any(line.startswith("[done]     all results match") for line in lines), lines


def test_piped_demo_draws_no_bar() -> None:
    result = run_piped(QUICK)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[done]     all results match" in result.stdout
    assert "\r" not in result.stdout + result.stderr and "generating [" not in result.stderr

import subprocess
import sys
from pathlib import Path

from headrace.dsl import Serdes
from headrace.examples.page_views import MINUTE, PER_MINUTE, SAMPLE, STORE, T0, VIEWS, build
from headrace.streams.testing import TestRecord, TopologyTestDriver


def test_one_final_count_per_page_and_minute_with_late_views_dropped() -> None:
    builder = build()
    with TopologyTestDriver(
        builder.build(), {"application_id": "pv"}, initial_wall_clock=T0
    ) as driver:
        views = driver.create_input_topic(VIEWS, Serdes.string(), Serdes.json())
        views.pipe_records(SAMPLE)
        output = driver.create_output_topic(PER_MINUTE, Serdes.string(), Serdes.json())
        # the first minute closed at T0 + 70 s; the second is still open
        assert output.read_key_values_to_list() == [
            ("/home", {"page": "/home", "minute": "22:14", "views": 3}),
            ("/cart", {"page": "/cart", "minute": "22:14", "views": 1}),
        ]
        assert builder.late_records.count() == 1  # bob's view 45 s late
        assert not driver.create_output_topic("pv-views-by-page-repartition").is_empty()
        driver.advance_wall_clock_time(20_000)
        assert output.is_empty()  # quiet for 20 s: not yet idle
        driver.advance_wall_clock_time(40_000)  # 60 s idle: stream time taken as T0 + 135 s
        assert [v["views"] for _k, v in output.read_key_values_to_list()] == [1, 1]
        store = driver.get_window_store(STORE)
        assert list(store.fetch("/home", T0, T0 + 2 * MINUTE)) == [(T0, 3), (T0 + MINUTE, 1)]
        assert sorted(k.key for k, _v in store.fetch_all(T0 + MINUTE, T0 + MINUTE)) == [
            "/cart",
            "/home",
        ]
        views.pipe_records([TestRecord("zoe", {"page": "/home", "user": "zoe"}, T0 + 100_000)])
        assert output.is_empty() and builder.late_records.count() == 2  # that minute has closed


def test_the_example_runs_as_a_program() -> None:
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-m", "headrace.examples.page_views"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "'minute': '22:15', 'views': 1" in result.stdout
    assert "late views dropped: 1" in result.stdout

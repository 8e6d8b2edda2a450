import subprocess
import sys
from pathlib import Path

from headrace.dsl import Serdes
from headrace.examples.click_enrichment import (
    CLICKS,
    ENRICHED,
    PROFILES,
    SAMPLE_CLICKS,
    SAMPLE_PROFILES,
    build,
)

S, J = Serdes.string(), Serdes.json()


def test_clicks_get_the_profile_as_of_the_click() -> None:
    from headrace.streams.testing import TopologyTestDriver

    builder = build()
    topology = builder.build()
    assert builder.copartition_groups() == [("enrich", ("enrich-left-repartition", PROFILES))]
    with TopologyTestDriver(topology, {"application_id": "ce"}) as driver:
        profiles = driver.create_input_topic(PROFILES, S, J)
        clicks = driver.create_input_topic(CLICKS, S, J)
        out = driver.create_output_topic(ENRICHED, S, J)
        profiles.pipe_key_value_list(SAMPLE_PROFILES)
        clicks.pipe_key_value_list(SAMPLE_CLICKS)
        assert [(k, v["name"], v["country"]) for k, v in out.read_key_values_to_list()] == [
            ("ann", "Ann", "NO"),
            ("bob", "Bob", "IT"),
            ("eve", None, None),
        ]
        profiles.pipe_input("ann", {"name": "Ann", "country": "SE"})  # moved
        profiles.pipe_input("bob", None)  # deleted
        assert out.is_empty()  # profile changes alone emit nothing
        clicks.pipe_key_value_list(
            [("s-9", {"user": "ann", "page": "/x"}), ("s-8", {"user": "bob", "page": "/y"})]
        )
        assert [(k, v["country"]) for k, v in out.read_key_values_to_list()] == [
            ("ann", "SE"),
            ("bob", None),
        ]
        assert not driver.create_output_topic("ce-enrich-left-repartition").is_empty()


def test_the_example_runs_as_a_program() -> None:
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-m", "headrace.examples.click_enrichment"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "eve {'user': 'eve', 'page': '/home', 'name': None, 'country': None}" in result.stdout

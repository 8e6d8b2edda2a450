import pytest

from headrace.streams import Processor, Record, Topology, TopologyError


class _Builder:
    def __init__(self, name: str) -> None:
        self.name = name
        self.logging_enabled = False

    def build(self) -> None:
        raise AssertionError("not built in these tests")


class Upper(Processor):
    def process(self, record: Record) -> None:
        self.context.forward(record.with_value(record.value.upper()))


def multi_branch(store_builder) -> Topology:  # type: ignore[no-untyped-def]
    t = Topology()
    t.add_source("src", "input")
    t.add_processor("route", Upper, "src")
    t.add_processor("left", Upper, "route")
    t.add_processor("right", Upper, "route")
    t.add_state_store(store_builder("counts"), "right")
    t.add_sink("left-sink", "left-out", "left")
    t.add_sink("right-sink", "right-out", "right")
    t.add_source("other-src", "other")
    t.add_sink("other-sink", "other-out", "other-src")
    return t


def test_describe_prints_kafka_streams_format_for_a_multi_branch_topology(store_builder) -> None:  # type: ignore[no-untyped-def]
    assert str(multi_branch(store_builder).describe()) == (
        "Topologies:\n"
        "   Sub-topology: 0\n"
        "    Source: src (topics: [input])\n"
        "      --> route\n"
        "    Processor: route (stores: [])\n"
        "      --> left, right\n"
        "      <-- src\n"
        "    Processor: left (stores: [])\n"
        "      --> left-sink\n"
        "      <-- route\n"
        "    Processor: right (stores: [counts])\n"
        "      --> right-sink\n"
        "      <-- route\n"
        "    Sink: left-sink (topic: left-out)\n"
        "      <-- left\n"
        "    Sink: right-sink (topic: right-out)\n"
        "      <-- right\n"
        "\n"
        "  Sub-topology: 1\n"
        "    Source: other-src (topics: [other])\n"
        "      --> other-sink\n"
        "    Sink: other-sink (topic: other-out)\n"
        "      <-- other-src\n"
        "\n"
    )


def test_description_is_data_too(store_builder) -> None:  # type: ignore[no-untyped-def]
    description = multi_branch(store_builder).describe()
    first = description.subtopologies[0]
    assert [n.name for n in first.nodes][:2] == ["src", "route"]
    right = next(n for n in first.nodes if n.name == "right")
    assert right.stores == ("counts",) and right.predecessors == ("route",)


def test_pattern_source_and_extractor_sink_are_described() -> None:
    t = Topology().add_source("s", pattern=r"sensors-.*").add_sink("k", lambda k, v, ts: "x", "s")
    text = str(t.describe())
    assert "Source: s (topics: sensors-.*)" in text
    assert "Sink: k (extractor class: " in text


def test_a_shared_store_joins_two_otherwise_separate_parts(store_builder) -> None:  # type: ignore[no-untyped-def]
    t = Topology()
    t.add_source("a", "ta").add_processor("pa", Upper, "a")
    t.add_source("b", "tb").add_processor("pb", Upper, "b")
    assert len(t.subtopologies()) == 2
    t.add_state_store(store_builder("shared"), "pa", "pb")
    (only,) = t.subtopologies()
    assert set(only.source_topics) == {"ta", "tb"} and only.stores == ("shared",)


@pytest.mark.parametrize(
    "build",
    [
        lambda t: t.add_source("src", "again"),  # name taken
        lambda t: t.add_source("src2", "input"),  # topic already read
        lambda t: t.add_processor("p", Upper, "missing"),  # unknown parent
        lambda t: t.add_processor("p", Upper),  # no parent
        lambda t: t.add_processor("p", Upper, "sink"),  # a sink has no children
        lambda t: t.add_source("s3"),  # neither topics nor pattern
        lambda t: t.connect_processor_and_state_stores("src", "x"),  # not a processor
        lambda t: t.add_state_store(_Builder("st"), "nope"),  # unknown processor
    ],
)
def test_malformed_topologies_are_refused(build, store_builder) -> None:  # type: ignore[no-untyped-def]
    t = Topology().add_source("src", "input").add_sink("sink", "out", "src")
    with pytest.raises(TopologyError):
        build(t)

"""KStream.process_values: key-preserving processors (FixedKeyProcessor), which need no
repartition downstream where KStream.process does."""

from typing import Any

import pytest

from headrace.dsl import FixedKeyProcessor, FixedKeyRecord, Serdes, StreamsBuilder, materialized
from headrace.state import Stores
from headrace.streams import ProcessingError, Processor, Record
from headrace.streams.testing import TopologyTestDriver

S, L = Serdes.string(), Serdes.long()
APP = {"application_id": "app"}


class RunningTotal(FixedKeyProcessor):
    """Forwards each key's running total, stamped one ms later, from a store."""

    def init(self, context: Any) -> None:
        super().init(context)
        self.store = context.get_state_store("totals")

    def process(self, record: FixedKeyRecord) -> None:
        if record.value is None:
            return  # nothing to add; a processor decides what a null value means
        if record.key is None:  # a null key reaches the processor; it passes it on as is
            self.context.forward(record)
            return
        total = (self.store.get(record.key) or 0) + record.value
        self.store.put(record.key, total)
        self.context.forward(record.with_value(total).with_timestamp(record.timestamp + 1))


def totals_store(builder: StreamsBuilder) -> None:
    builder.add_state_store(
        Stores.key_value_store("totals", persistent=False).with_key_serde(S).with_value_serde(L)
    )


def test_a_fixed_key_processor_changes_values_and_timestamps_with_its_store() -> None:
    b = StreamsBuilder()
    totals_store(b)
    b.stream("in", key_serde=S, value_serde=L).process_values(RunningTotal, "totals").to(
        "out", key_serde=S, value_serde=L
    )
    with TopologyTestDriver(b.build(), APP) as driver:
        source = driver.create_input_topic("in", S, L)
        for key, value, ts in [
            ("a", 1, 10),
            ("b", 5, 11),
            ("a", None, 12),
            (None, 3, 13),
            ("a", 2, 14),
        ]:
            source.pipe_input(key, value, timestamp=ts)
        out = driver.create_output_topic("out", S, L).read_records_to_list()
    assert [(r.key, r.value, r.timestamp) for r in out] == [
        ("a", 1, 11),
        ("b", 5, 12),
        (None, 3, 13),  # a null key reaches the processor, as in Kafka Streams
        ("a", 3, 15),
    ]


def test_a_fixed_key_record_has_no_way_to_change_its_key_and_context_refuses_other_records() -> (
    None
):
    assert not hasattr(FixedKeyRecord("k", 1, 0), "with_key")

    class Rekeying(FixedKeyProcessor):
        def process(self, record: FixedKeyRecord) -> None:
            self.context.forward(Record("other", record.value, record.timestamp))  # type: ignore[arg-type]

    b = StreamsBuilder()
    b.stream("in", key_serde=S, value_serde=L).process_values(Rekeying).to(
        "out", key_serde=S, value_serde=L
    )
    with (
        TopologyTestDriver(b.build(), APP) as driver,
        pytest.raises(ProcessingError, match="FixedKeyRecord"),
    ):
        driver.create_input_topic("in", S, L).pipe_input("k", 1)


class Doubling(FixedKeyProcessor):
    def process(self, record: FixedKeyRecord) -> None:
        self.context.forward(record.with_value(record.value * 2))


class DoublingRecords(Processor):
    def process(self, record: Record) -> None:
        self.context.forward(record.with_value(record.value * 2))


def test_process_values_needs_no_repartition_where_process_forces_one() -> None:
    def counted(keyed: bool) -> Any:
        b = StreamsBuilder()
        s = b.stream("in", key_serde=S, value_serde=L)
        s = s.process_values(Doubling) if keyed else s.process(DoublingRecords)
        s.group_by_key(key_serde=S, value_serde=L).count(
            materialized=materialized("counts", caching=False)
        ).to_stream().to("out", key_serde=S, value_serde=L)
        return b.build()

    assert counted(keyed=True).internal_topics == {}
    assert list(counted(keyed=False).internal_topics) == ["counts-repartition"]
    with TopologyTestDriver(counted(keyed=True), APP) as driver:
        driver.create_input_topic("in", S, L).pipe_key_value_list([("a", 1), ("a", 2)])
        assert driver.create_output_topic("out", S, L).read_key_values_to_list() == [
            ("a", 1),
            ("a", 2),
        ]


def test_a_key_changed_before_process_values_is_still_repartitioned() -> None:
    b = StreamsBuilder()
    (
        b.stream("in", key_serde=S, value_serde=L)
        .select_key(lambda k, v: k.upper())
        .process_values(Doubling)
        .group_by_key(key_serde=S, value_serde=L)
        .count(materialized=materialized("counts"))
    )
    assert list(b.build().internal_topics) == ["counts-repartition"]

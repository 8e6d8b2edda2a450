"""The batch loops that call serdes' bare functions: nulls stay nulls, and a record the
bare function refuses is handled exactly as the checked serde would handle it."""

import pytest

from headrace.dsl import DeserializationError, Serdes, SerializationError, StreamsBuilder
from headrace.streams import LogAndContinueHandler, ProcessingError, RecordDeserializationError
from headrace.streams.testing import TopologyTestDriver

STR, JSON, B = Serdes.string(), Serdes.json(), Serdes.bytes()


def driver(on_error: object = None) -> TopologyTestDriver:
    builder = StreamsBuilder()
    builder.stream(
        "in", key_serde=STR, value_serde=JSON, on_deserialization_error=on_error
    ).map_values(lambda v: v if v is None else {"n": v["n"] + 1} if "n" in v else {"not JSON"}).to(
        "out", key_serde=STR, value_serde=JSON
    )
    return TopologyTestDriver(builder.build(), {"application_id": "bare"})


def test_null_keys_and_values_pass_both_ways() -> None:
    with driver() as d:
        d.create_input_topic("in", B, B).pipe_records(
            [(b"a", b'{"n":1}'), (None, b'{"n":2}'), (b"c", None), (None, None)]
        )
        assert d.create_output_topic("out", B, B).read_key_values_to_list() == [
            (b"a", b'{"n":2}'),
            (None, b'{"n":3}'),
            (b"c", None),
            (None, None),
        ]


def test_a_record_the_bare_decoder_refuses_goes_to_the_handler() -> None:
    records = [(b"a", b'{"n":1}'), (b"b", b"{nope"), (b"\xff", b'{"n":3}'), (b"d", b'{"n":4}')]
    with driver(LogAndContinueHandler()) as d:
        d.create_input_topic("in", B, B).pipe_records(records)
        assert d.create_output_topic("out", STR, JSON).read_key_values_to_list() == [
            ("a", {"n": 2}),
            ("d", {"n": 5}),
        ]
    with pytest.raises(RecordDeserializationError) as info, driver() as d:
        d.create_input_topic("in", B, B).pipe_records(records)
    assert info.value.offset == 1 and isinstance(info.value.__cause__, DeserializationError)


def test_a_value_the_bare_encoder_refuses_raises_the_serdes_error() -> None:
    with pytest.raises(ProcessingError) as info, driver() as d:
        d.create_input_topic("in", B, B).pipe_records([(b"a", b'{"n":1}'), (b"b", b'{"bad":1}')])
    assert isinstance(info.value.__cause__, SerializationError)


class Text:
    """Not a str, but encodes itself: the checked string serializer accepts it."""

    def __init__(self, text: str) -> None:
        self.text = text

    def encode(self, encoding: str) -> bytes:
        return self.text.encode(encoding)


def test_what_only_the_checked_encoder_accepts_is_still_written() -> None:
    builder = StreamsBuilder()
    builder.stream("in", key_serde=B, value_serde=STR).map_values(
        lambda v: None if v is None else Text(v)
    ).to("out", value_serde=STR)  # type: ignore[arg-type]  # a Text through the str serde, on purpose
    with TopologyTestDriver(builder.build(), {"application_id": "bare"}) as d:
        d.create_input_topic("in", B, B).pipe_records([(b"a", b"x"), (b"b", None)])
        assert d.create_output_topic("out", B, B).read_values_to_list() == [b"x", None]

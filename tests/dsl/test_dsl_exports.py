from headrace import dsl


def test_dsl_public_surface_is_pinned() -> None:
    assert sorted(dsl.__all__) == [
        "AgentApp",
        "AgentStream",
        "AgentTopic",
        "BranchedKStream",
        "BufferConfig",
        "CogroupedKStream",
        "DeserializationError",
        "DslError",
        "FixedKeyProcessor",
        "FixedKeyProcessorContext",
        "FixedKeyRecord",
        "GlobalKTable",
        "JoinWindows",
        "KGroupedStream",
        "KGroupedTable",
        "KStream",
        "KTable",
        "LateRecord",
        "LateRecords",
        "Materialized",
        "Serde",
        "SerdeError",
        "Serdes",
        "SerializationError",
        "SerializerError",
        "SessionWindowedCogroupedKStream",
        "SessionWindowedKStream",
        "SessionWindowedSerde",
        "SessionWindows",
        "SlidingWindows",
        "StreamsBuilder",
        "Suppressed",
        "Table",
        "TimeWindowedCogroupedKStream",
        "TimeWindowedKStream",
        "TimeWindowedSerde",
        "TimeWindows",
        "TopologyBuildError",
        "ValueTransformerWithKey",
        "Window",
        "Windowed",
        "WindowedSerdes",
        "materialized",
        "until_time_limit",
        "until_window_closes",
    ]
    for name in dsl.__all__:
        assert hasattr(dsl, name)


def test_errors_share_one_root_and_are_not_retriable() -> None:
    for error in (
        dsl.SerdeError,
        dsl.SerializerError,
        dsl.DeserializationError,
        dsl.TopologyBuildError,
    ):
        assert issubclass(error, dsl.DslError) and error.retriable is False
    # SerializationError is headrace.state's, the one class of that name.
    assert issubclass(dsl.SerializerError, dsl.SerializationError)

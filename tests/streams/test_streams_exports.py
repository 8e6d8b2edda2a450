from headrace import streams
from headrace.streams import testing


def test_streams_public_surface_is_pinned() -> None:
    assert sorted(streams.__all__) == [
        "App",
        "AsyncOptions",
        "AsyncProcessor",
        "BatchProcessor",
        "Cancellable",
        "ConfigError",
        "ConsumedRecord",
        "DeadLetterQueueHandler",
        "DeserializationAction",
        "DeserializationHandler",
        "DeserializationResponse",
        "Deserializer",
        "Headers",
        "IllegalStateTransition",
        "KeyValue",
        "LogAndContinueHandler",
        "LogAndFailHandler",
        "NoOutputRecordError",
        "NodeDescription",
        "ProcessingError",
        "Processor",
        "ProcessorContext",
        "ProcessorSupplier",
        "ProducedRecord",
        "PunctuationType",
        "Rec",
        "Record",
        "RecordDeserializationError",
        "RecordMetadata",
        "Serializer",
        "StateStore",
        "StateStoreContext",
        "StateStoreError",
        "StoreAccessError",
        "StoreBuilder",
        "StreamPartitioner",
        "StreamsConfig",
        "StreamsError",
        "Subtopology",
        "SubtopologyDescription",
        "TaskExecutor",
        "TaskState",
        "TimestampExtractor",
        "TopicNameExtractor",
        "Topology",
        "TopologyDescription",
        "TopologyError",
    ]
    for name in streams.__all__:
        assert hasattr(streams, name), name


def test_testing_public_surface_is_pinned() -> None:
    assert sorted(testing.__all__) == [
        "ChangelogEntry",
        "TestInputTopic",
        "TestOutputTopic",
        "TestRecord",
        "TopologyTestDriver",
    ]


def test_every_error_descends_from_the_root_and_says_if_retriable() -> None:
    # StateStoreError is headrace.state's (the one class of that name); what streams raises
    # for an unknown store, StoreAccessError, is both.
    errors = [getattr(streams, n) for n in streams.__all__ if n.endswith(("Error", "Transition"))]
    errors = [e for e in errors if e is not streams.StateStoreError]
    assert issubclass(streams.StoreAccessError, streams.StateStoreError)
    assert len(errors) >= 7
    for error in errors:
        assert issubclass(error, streams.StreamsError)
        assert error.retriable is False
    assert issubclass(streams.NoOutputRecordError, LookupError)

import headrace.streams.runtime as runtime
from headrace import streams


def test_runtime_public_surface_is_pinned() -> None:
    assert sorted(runtime.__all__) == [
        "App",
        "AppSettings",
        "AppState",
        "AppStopped",
        "ChangelogReader",
        "ClientError",
        "ClientFactory",
        "CoPartitionError",
        "FencedError",
        "GroupConsumer",
        "PartitionGroupAssignor",
        "ProductionError",
        "RecordProducer",
        "RestoreError",
        "RuntimeFailure",
        "SettingsError",
        "SourceTopicDeletedError",
        "TaskLayout",
        "TopicAdmin",
        "TransactionAbortedError",
        "TransactionError",
        "TransactionalProducer",
        "assign_tasks",
        "murmur2",
        "partition_for_key",
    ]
    for name in runtime.__all__:
        assert hasattr(runtime, name), name


def test_runtime_errors_hang_under_the_streams_root_and_say_if_retriable() -> None:
    errors = [
        getattr(runtime, n) for n in runtime.__all__ if n.endswith(("Error", "Failure", "Stopped"))
    ]
    # TransactionError is headrace.base's (the one class of that name); what the runtime
    # raises, TransactionAbortedError, is both.
    errors = [e for e in errors if e is not runtime.TransactionError]
    assert issubclass(runtime.TransactionAbortedError, runtime.TransactionError)
    assert len(errors) == 10
    for error in errors:
        assert issubclass(error, runtime.RuntimeFailure)
        assert issubclass(error, streams.StreamsError)
        assert isinstance(error.retriable, bool)
    assert runtime.ClientError("x", retriable=True).retriable is True
    assert runtime.ClientError("x").retriable is False
    assert runtime.TransactionAbortedError.retriable is True  # aborted, the tasks rewind
    assert runtime.FencedError.retriable is False
    assert issubclass(runtime.SourceTopicDeletedError, runtime.ClientError)
    assert runtime.SourceTopicDeletedError("gone").retriable is False

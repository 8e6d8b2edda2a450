"""The public surface of spark_bridge, and that importing it stays cheap."""

from __future__ import annotations

import subprocess
import sys

from headrace import spark_bridge
from headrace.spark_bridge import (
    BrokerError,
    BrokerRequestError,
    DecodeError,
    DeltaError,
    MissingDependencyError,
    OffsetRangeError,
    OptionError,
    SparkBridgeError,
    UnsupportedTableError,
)


def test_all_is_pinned() -> None:
    assert spark_bridge.__all__ == [
        "BrokerError",
        "BrokerRequestError",
        "Commit",
        "DecodeError",
        "DeltaError",
        "DeltaSink",
        "DeltaSparkExport",
        "ExportJob",
        "ExportResult",
        "ExportState",
        "HeadraceDataSource",
        "MissingDependencyError",
        "OffsetRange",
        "OffsetRangeError",
        "OptionError",
        "SparkBridgeError",
        "StreamExportResult",
        "TopicPartition",
        "UnsupportedTableError",
        "decode_json",
        "decode_registry",
        "delta_spark_session",
        "export_topic",
        "json_values_to_arrow",
        "read_delta",
        "register_delta_tables",
        "register_source",
        "spark_schema",
        "spark_session",
    ]
    for name in spark_bridge.__all__:
        assert getattr(spark_bridge, name) is not None


def test_error_tree_has_one_root_and_retriable_flags() -> None:
    for error in (
        OptionError,
        MissingDependencyError,
        BrokerRequestError,
        OffsetRangeError,
        DecodeError,
        DeltaError,
        UnsupportedTableError,
    ):
        assert issubclass(error, SparkBridgeError)
    # BrokerError is the one class of that name (headrace.base's); what the Kafka client
    # raises here is also a SparkBridgeError.
    assert issubclass(BrokerRequestError, BrokerError)
    assert issubclass(OffsetRangeError, BrokerRequestError)
    assert issubclass(UnsupportedTableError, DeltaError)
    assert BrokerRequestError.retriable is True
    assert OffsetRangeError.retriable is False  # deleted records do not come back
    assert OptionError.retriable is False
    assert DecodeError("not JSON", row=3).retriable is False  # the same bytes again
    assert DecodeError("not JSON", row=3).row == 3
    assert DeltaError("lost a race", retriable=True).retriable is True
    assert DeltaError("bad table").retriable is False


def test_import_does_not_load_heavy_dependencies() -> None:
    code = (
        "import sys, headrace.spark_bridge, headrace.spark_bridge._commands; "
        "print(sorted(m for m in ('pyspark', 'pyarrow', 'deltalake', 'confluent_kafka', "
        "'pandas') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_unknown_attribute_raises() -> None:
    try:
        spark_bridge.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("expected AttributeError")

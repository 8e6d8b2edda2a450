"""Each error name that two packages used for unrelated classes is one class now.

The name lives at the lowest package that needs it and is re-exported where it was; what
a package raises under it also derives from that package's own root, so an ``except``
clause written against either keeps catching.
"""

from __future__ import annotations

import importlib
import pkgutil

import pytest

SHARED = {
    "BrokerError": "headrace.base._errors",
    "CoordinatorNotAvailableError": "headrace.base._errors",
    "IllegalTransitionError": "headrace.base._lifecycle",
    "SerializationError": "headrace.state._errors",
    "StateStoreError": "headrace.state._errors",
    "TransactionError": "headrace.base._errors",
}
SUBPACKAGES = (
    "base",
    "console",
    "dsl",
    "examples",
    "log_broker",
    "schema_registry",
    "spark_bridge",
    "state",
    "streams",
    "transactions",
)


def _every_module() -> list[str]:
    names = ["headrace", "headrace.testing"]
    for sub in SUBPACKAGES:
        package = importlib.import_module(f"headrace.{sub}")
        names.append(package.__name__)
        names += [m.name for m in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")]
    return [n for n in names if not n.endswith("__main__")]


def test_each_shared_name_is_one_class_wherever_it_is_found() -> None:
    seen: dict[str, dict[type, list[str]]] = {name: {} for name in SHARED}
    for module_name in _every_module():
        module = importlib.import_module(module_name)
        for name in SHARED:
            value = vars(module).get(name)
            if isinstance(value, type):
                seen[name].setdefault(value, []).append(module_name)
    for name, home in SHARED.items():
        classes = seen[name]
        assert len(classes) == 1, f"{name}: {classes}"
        (cls,) = classes
        assert cls.__module__ == home
        assert len(classes[cls]) >= 2, f"{name} is found only in {classes[cls]}"


def test_each_public_path_still_resolves_to_the_one_class() -> None:
    from headrace import base, dsl, log_broker, spark_bridge, state, streams, transactions
    from headrace.log_broker import groups
    from headrace.streams import runtime

    assert state.StateStoreError is streams.StateStoreError
    assert state.SerializationError is dsl.SerializationError
    assert base.TransactionError is transactions.TransactionError is runtime.TransactionError
    assert base.BrokerError is log_broker.BrokerError is spark_bridge.BrokerError
    assert (
        base.CoordinatorNotAvailableError
        is transactions.CoordinatorNotAvailableError
        is groups.CoordinatorNotAvailableError
    )
    assert (
        base.IllegalTransitionError
        is transactions.IllegalTransitionError
        is groups.IllegalTransitionError
    )


def _raised_and_caught_by() -> list[tuple[type[Exception], tuple[type[Exception], ...]]]:
    from headrace import base, dsl, spark_bridge, state, streams, transactions
    from headrace.log_broker import groups
    from headrace.streams import runtime

    return [
        (streams.StoreAccessError, (streams.StreamsError, state.StateStoreError)),
        (dsl.SerializerError, (dsl.SerdeError, dsl.DslError, state.SerializationError)),
        (runtime.TransactionAbortedError, (runtime.RuntimeFailure, base.TransactionError)),
        (spark_bridge.BrokerRequestError, (spark_bridge.SparkBridgeError, base.BrokerError)),
        (spark_bridge.OffsetRangeError, (spark_bridge.SparkBridgeError, base.BrokerError)),
        (
            transactions.TxnCoordinatorNotAvailableError,
            (transactions.CoordinatorError, base.CoordinatorNotAvailableError),
        ),
        (
            groups.GroupCoordinatorNotAvailableError,
            (groups.GroupError, base.CoordinatorNotAvailableError),
        ),
        (
            transactions.IllegalTxnTransitionError,
            (transactions.TransactionError, base.IllegalTransitionError),
        ),
        (groups.IllegalGroupTransitionError, (groups.GroupError, base.IllegalTransitionError)),
        (streams.IllegalStateTransition, (streams.StreamsError, base.IllegalTransitionError)),
        (state.InvalidStoreStateError, (state.StateStoreError, base.IllegalTransitionError)),
    ]


@pytest.mark.parametrize(
    ("raised", "catchers"), _raised_and_caught_by(), ids=lambda v: getattr(v, "__name__", "")
)
def test_what_a_package_raises_is_caught_by_the_shared_name_and_by_its_root(
    raised: type[Exception], catchers: tuple[type[Exception], ...]
) -> None:
    for catcher in catchers:
        with pytest.raises(catcher):
            raise raised("boom")


def test_the_shared_classes_keep_each_package_s_flags() -> None:
    from headrace import spark_bridge, transactions
    from headrace.log_broker import groups
    from headrace.streams import runtime

    assert runtime.TransactionAbortedError("x").retriable is True  # the tasks rewind
    assert spark_bridge.BrokerRequestError("x").retriable is True
    assert spark_bridge.OffsetRangeError("x").retriable is False
    for unavailable in (
        transactions.TxnCoordinatorNotAvailableError,
        groups.GroupCoordinatorNotAvailableError,
    ):
        assert (unavailable.retriable, unavailable.error_code) == (True, 15)
    assert transactions.IllegalTxnTransitionError.error_code == -1
    assert groups.IllegalGroupTransitionError.error_code == -1


def test_an_unknown_store_and_a_bad_value_are_caught_either_way() -> None:
    from headrace import dsl, state, streams
    from headrace.dsl import Serdes, StreamsBuilder
    from headrace.testing import TopologyTestDriver

    builder = StreamsBuilder()
    builder.stream("in").to("out")
    with TopologyTestDriver(builder.build(), {"application_id": "shared-errors"}) as driver:
        store_catchers: tuple[type[Exception], ...] = (streams.StreamsError, state.StateStoreError)
        for catcher in store_catchers:
            with pytest.raises(catcher, match="no state store named 'absent'"):
                driver.get_state_store("absent")
    serde_catchers = (dsl.SerdeError, state.SerializationError, state.StateStoreError)
    for bad in serde_catchers:
        with pytest.raises(bad):
            Serdes.long().serialize("topic", "not a number")  # type: ignore[arg-type]

"""Test utilities: run a topology without a broker, with a clock the test controls."""

from ._driver import TopologyTestDriver as TopologyTestDriver
from ._records import ChangelogEntry as ChangelogEntry
from ._records import TestRecord as TestRecord
from ._topics import TestInputTopic as TestInputTopic
from ._topics import TestOutputTopic as TestOutputTopic

__all__ = [
    "ChangelogEntry",
    "TestInputTopic",
    "TestOutputTopic",
    "TestRecord",
    "TopologyTestDriver",
]

"""Test utilities: run a topology without a broker, with a clock the test controls.

``from headrace.testing import TopologyTestDriver`` is the supported path; the classes live
in :mod:`headrace.streams.testing`.
"""

from headrace.streams.testing import ChangelogEntry as ChangelogEntry
from headrace.streams.testing import TestInputTopic as TestInputTopic
from headrace.streams.testing import TestOutputTopic as TestOutputTopic
from headrace.streams.testing import TestRecord as TestRecord
from headrace.streams.testing import TopologyTestDriver as TopologyTestDriver

__all__ = [
    "ChangelogEntry",
    "TestInputTopic",
    "TestOutputTopic",
    "TestRecord",
    "TopologyTestDriver",
]

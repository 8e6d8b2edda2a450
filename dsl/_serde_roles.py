"""Which serde a key or value side gets where it leaves the program's objects.

The DSL carries, per stream and table, the serde of each side: one the program gave
(at the source, to an operator, in ``materialized``), ``None`` where an operator made
the side anew (``map_values``, ``group_by``, a joiner), or :data:`SOURCE_SIDE` where the
side is a source topic's records read without a serde and unchanged since. Two kinds of
place turn that into bytes, by different rules:

* **internal** (:func:`for_internal`): repartition and subscription topics, changelogs
  and DSL state stores are the program's own. The serde carried wins; with none, the
  self-describing auto serde (``Serdes.auto()``) is used, so no serde is ever needed here.
* **sink** (:func:`for_sink`): a ``to()`` topic is the user's contract. The serde given
  to ``to()`` or carried wins; a side read unchanged from a serde-less source passes
  through (bytes in, bytes out, or the App's default serde on both ends); a side the
  program computed gets the App's default serde (``Topology.APP_DEFAULT``), and with no
  default the App refuses to start (the test driver to open) naming the sink and topic.
"""

from __future__ import annotations

import copy
from typing import Any

from headrace.streams import Topology

from ._auto_serde import AUTO, SOURCE_SIDE, SourceSideSerde
from ._serdes import Serdes
from ._windowed_serdes import _WindowedSerde


def _with_inner(serde: _WindowedSerde, inner: Any) -> _WindowedSerde:
    clone = copy.copy(serde)
    clone.inner = inner
    return clone


def for_internal(serde: Any) -> Any:
    """The serde to write ``serde``'s side into an internal topic or a store (a windowed
    serde with no inner serde binds its inner side with ``_binding``, which does the same)."""
    return AUTO if serde is None else serde


def for_sink(serde: Any) -> Any:
    """The serializer a sink node gets for a side carrying ``serde`` (module docstring)."""
    if serde is None:
        return Topology.APP_DEFAULT
    if isinstance(serde, SourceSideSerde):
        return None
    if isinstance(serde, _WindowedSerde):
        if serde.inner is None:
            return Topology.APP_DEFAULT
        if isinstance(serde.inner, SourceSideSerde):
            return _with_inner(serde, Serdes.bytes())
    return serde


def source_side(serde: Any) -> Any:
    """What a stream read from a source carries for a side given ``serde`` there."""
    return SOURCE_SIDE if serde is None else serde

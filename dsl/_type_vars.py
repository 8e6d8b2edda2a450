"""The type variables of the DSL's generic classes: ``KStream[K, V]``, ``KTable[K, V]``, ...

``K`` and ``V`` default to ``Any`` (PEP 696), so a stream read without serdes, or a
user's annotation ``KStream`` with no parameters, is ``KStream[Any, Any]`` and checks as
it always did, while a stream read with ``Serdes.string()`` values is ``KStream[Any, str]``
and ``map_values``' result type follows from the mapper.
"""

from __future__ import annotations

from typing import Any

from typing_extensions import TypeVar

K = TypeVar("K", default=Any)  # the key type of a stream or table
V = TypeVar("V", default=Any)  # the value type
KR = TypeVar("KR")  # a key an operator computes
VR = TypeVar("VR")  # a value an operator computes
VO = TypeVar("VO")  # the other side's value, in a join
KO = TypeVar("KO")  # the other side's key (foreign-key and global-table joins)

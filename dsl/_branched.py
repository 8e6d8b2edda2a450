"""BranchedKStream: the result of ``KStream.split()``.

Branches are collected immutably (each ``branch`` returns a new object); the graph nodes
are written only when the split is finished with :meth:`default_branch` or
:meth:`no_default_branch`, which return the branches as a dict keyed by branch name.
A branch's name is the split's name followed by the branch's own name, or by its
position (from 1; the default branch is ``0``), as in Kafka Streams.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Generic, NamedTuple

from . import _operators as ops
from ._errors import TopologyBuildError
from ._graph import ProcessorGraphNode
from ._type_vars import K, V

if TYPE_CHECKING:
    from ._kstream import KStream, Predicate

Chain = Callable[["KStream[K, V]"], "KStream[Any, Any] | None"]


class _Branch(NamedTuple):
    predicate: Any  # a predicate, or None for the default branch
    name: str | None
    chain: Chain[Any, Any] | None


class BranchedKStream(Generic[K, V]):
    __slots__ = ("_branches", "_source", "_split_name")

    def __init__(
        self, source: KStream[K, V], split_name: str, branches: tuple[_Branch, ...]
    ) -> None:
        self._source = source
        self._split_name = split_name
        self._branches = branches

    def branch(
        self,
        predicate: Predicate[K, V],
        *,
        name: str | None = None,
        chain: Chain[K, V] | None = None,
    ) -> BranchedKStream[K, V]:
        """Add a branch taking the records for which ``predicate(key, value)`` holds first.

        ``chain`` receives the branch's stream and may return a derived stream to put
        in the result instead (or ``None`` to leave the branch out of it).
        """
        return BranchedKStream(
            self._source, self._split_name, (*self._branches, _Branch(predicate, name, chain))
        )

    def default_branch(
        self, *, name: str | None = None, chain: Chain[K, V] | None = None
    ) -> dict[str, KStream[Any, Any]]:
        """Finish the split; records no predicate took go to this branch."""
        return self._finish(_Branch(None, name, chain))

    def no_default_branch(self) -> dict[str, KStream[Any, Any]]:
        """Finish the split; records no predicate took are dropped."""
        return self._finish(None)

    def _finish(self, default: _Branch | None) -> dict[str, KStream[Any, Any]]:
        if not self._branches:
            raise TopologyBuildError(f"split {self._split_name} has no branch")
        source = self._source
        builder = source._builder
        names = [
            self._split_name + (b.name if b.name is not None else str(i))
            for i, b in enumerate(self._branches, start=1)
        ]
        default_name = None
        if default is not None:
            default_name = self._split_name + (default.name if default.name is not None else "0")
        all_names = [*names, *([default_name] if default_name else [])]
        if len(set(all_names)) != len(all_names):
            raise TopologyBuildError(f"split {self._split_name} has two branches named alike")
        predicates = tuple(b.predicate for b in self._branches)
        splitter = ProcessorGraphNode(
            self._split_name,
            (source._node,),
            supplier=lambda: ops.Splitter(predicates, names, default_name),
        )
        builder.add_node(splitter)
        result: dict[str, KStream] = {}
        branches = [*self._branches, *([default] if default is not None else [])]
        for branch_name, branch in zip(all_names, branches, strict=True):
            node = ProcessorGraphNode(
                branch_name,
                (splitter,),
                supplier=lambda: ops.Transform(ops.pass_through),
            )
            builder.add_node(node)
            stream = source._then(
                node,
                key_serde=source.key_serde,
                value_serde=source.value_serde,
                repartition_required=source.repartition_required,
            )
            if branch.chain is None:
                result[branch_name] = stream
            else:
                chained = branch.chain(stream)
                if chained is not None:
                    result[branch_name] = chained
        return result

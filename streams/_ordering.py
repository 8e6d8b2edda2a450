"""Keeping record order where batches from different paths meet again.

Batches move breadth-first, so when a batch splits (a fan-out, a branch) and the parts
meet again (a node with several parents, or several sinks writing one topic), the parts
arrive one after the other instead of interleaved as the input was. A
:class:`WaveBuffer` sits at such a meeting point: it collects what arrives during one
wave (one source batch, or one round of punctuations) and, at the end of the wave,
delivers it in source-offset order. The sort is stable, so records with the same offset
(from ``flat_map``, or from a punctuation, offset -1) keep their arrival order, which is
the order a record-at-a-time walk would have produced.

Points where paths never meet again pay nothing: no buffer is put there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter

from ._record import Rec, RecAt

Push = Callable[[list[Rec]], None]
_offset = itemgetter(RecAt.SOURCE_OFFSET)


def _tagged_offset(item: tuple[int, Rec]) -> int:
    return item[1][RecAt.SOURCE_OFFSET]


class WaveBuffer:
    """Collects batches on numbered ports; :meth:`flush` delivers them in offset order.

    ``targets[i]`` receives what arrived on port ``i``; when every port feeds the same
    target (a node with several parents) the merged batch goes out in one call.
    """

    def __init__(self, targets: Sequence[Push]) -> None:
        self._targets = tuple(targets)
        self._single = len(set(map(id, targets))) == 1
        self._parts: list[list[Rec]] = [[] for _ in targets]

    def port(self, index: int) -> Push:
        return self._parts[index].extend

    def pending(self) -> bool:
        return any(self._parts)

    def flush(self) -> None:
        """Deliver everything collected so far, in source-offset order, then reset."""
        parts = self._parts
        filled = [i for i, p in enumerate(parts) if p]
        if not filled:
            return
        taken = [parts[i][:] for i in range(len(parts))]
        for p in parts:
            p.clear()
        if len(filled) == 1:
            i = filled[0]
            self._targets[i](taken[i])
            return
        if self._single:
            merged = [r for i in filled for r in taken[i]]
            merged.sort(key=_offset)
            self._targets[0](merged)
            return
        tagged = [(i, r) for i in filled for r in taken[i]]
        tagged.sort(key=_tagged_offset)
        run: list[Rec] = []
        current = tagged[0][0]
        for i, r in tagged:
            if i != current:
                self._targets[current](run)
                run, current = [], i
            run.append(r)
        self._targets[current](run)

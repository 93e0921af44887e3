"""Consumer ids (what the algorithms number) ↔ consumer names (what routing tables list)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np


class ConsumerNames:
    """Ids ``0 … n−1`` are the ``known`` names in order, so Eq. 12's "lowest free id" opens known
    consumers first; a higher id ``i`` is a new consumer named ``c<i>`` (``c<i>_<k>`` if a known
    or ``reserved`` name already is ``c<i>``)."""

    def __init__(self, known: Iterable[str], reserved: Iterable[str] = ()) -> None:
        self.known = list(dict.fromkeys(known))
        self._index = {name: i for i, name in enumerate(self.known)}
        self._taken = set(self.known) | set(reserved)
        self._fresh: dict[int, str] = {}

    def id(self, name: str) -> int:
        if name not in self._index:
            if self._fresh:
                raise ValueError(f"consumer {name!r} is new but fresh ids were already named")
            self._index[name] = len(self.known)
            self.known.append(name)
            self._taken.add(name)
        return self._index[name]

    def name(self, cid: int) -> str:
        if cid < 0:
            raise ValueError(f"consumer ids are >= 0, got {cid}")
        if cid < len(self.known):
            return self.known[cid]
        if cid not in self._fresh:
            name, k = f"c{cid}", 0
            while name in self._taken:
                k += 1
                name = f"c{cid}_{k}"
            self._fresh[cid] = name
            self._taken.add(name)
        return self._fresh[cid]

    def encode(self, names: Sequence[str | None]) -> np.ndarray:
        """Names → ids (−1 for None)."""
        return np.array([-1 if n is None else self.id(n) for n in names], dtype=np.int64)

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.name(int(i)) for i in ids]

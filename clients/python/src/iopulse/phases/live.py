"""The phases open now, followed from a daemon's Info and the marks in its Updates."""
from __future__ import annotations

from typing import Iterable

from ..model import PhaseMark, Update


class OpenPhases:
    def __init__(self, initial: Iterable[PhaseMark] = ()) -> None:
        self._open: dict[int, PhaseMark] = {m.id: m for m in initial}

    def update(self, u: Update) -> None:
        for m in u.phases:
            if m.end:
                self._open.pop(m.begin_id, None)
            else:
                self._open[m.id] = m

    def now(self) -> list[PhaseMark]:
        """Oldest first (outer phases before the ones nested in them)."""
        return [self._open[i] for i in sorted(self._open)]

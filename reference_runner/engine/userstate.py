"""User state cells of stateful ParDos, with each bundle's writes staged until it commits.

A cell is identified by an opaque tuple (the state service uses (kind, transform, state id,
encoded key, encoded window)). Bag cells hold encoded chunks in append order; ordered-list
cells hold (sort key, encoded entry) pairs. A bundle's first write to a cell copies the
committed contents into the bundle's staging area; its reads see the staged copy. Commit
publishes the staged cells, discard (a failed bundle, to be retried) drops them.
"""

from __future__ import annotations


class UserStateStore:
    def __init__(self):
        self._committed: dict[tuple, list] = {}
        self._staged: dict[str, dict[tuple, list]] = {}

    # -- reads -------------------------------------------------------------------------------
    def read(self, bundle: str, cell: tuple) -> list:
        staged = self._staged.get(bundle, {})
        return list(staged[cell] if cell in staged else self._committed.get(cell, ()))

    def read_sorted(self, bundle: str, cell: tuple, start: int | None = None, end: int | None = None) -> list:
        """Ordered-list entries with start <= sort key < end, by sort key (stable for equal keys)."""
        entries = [e for e in self.read(bundle, cell) if _in_range(e[0], start, end)]
        return sorted(entries, key=lambda e: e[0])

    # -- staged writes -----------------------------------------------------------------------
    def append(self, bundle: str, cell: tuple, items: list) -> None:
        self._writable(bundle, cell).extend(items)

    def clear(self, bundle: str, cell: tuple) -> None:
        self._writable(bundle, cell).clear()

    def clear_range(self, bundle: str, cell: tuple, start: int, end: int) -> None:
        entries = self._writable(bundle, cell)
        entries[:] = [e for e in entries if not _in_range(e[0], start, end)]

    def _writable(self, bundle: str, cell: tuple) -> list:
        staged = self._staged.setdefault(bundle, {})
        if cell not in staged:
            staged[cell] = list(self._committed.get(cell, ()))
        return staged[cell]

    # -- bundle outcome ----------------------------------------------------------------------
    def commit(self, bundle: str) -> None:
        for cell, contents in self._staged.pop(bundle, {}).items():
            if contents:
                self._committed[cell] = contents
            else:
                self._committed.pop(cell, None)

    def discard(self, bundle: str) -> None:
        self._staged.pop(bundle, None)

    def cells(self) -> list[tuple]:
        """Every cell with committed contents."""
        return list(self._committed)

    def release(self, owner) -> None:
        """Garbage-collect the committed cells whose second part is ``owner`` (a transform whose
        stage has finished: every window has expired and every timer has fired)."""
        for cell in [c for c in self._committed if c[1] == owner]:
            del self._committed[cell]

    def release_window(self, owner, window) -> None:
        """Garbage-collect ``owner``'s committed cells of one window (its last part), which expired."""
        for cell in [c for c in self._committed if c[1] == owner and c[-1] == window]:
            del self._committed[cell]


def _in_range(sort_key: int, start: int | None, end: int | None) -> bool:
    return (start is None or sort_key >= start) and (end is None or sort_key < end)

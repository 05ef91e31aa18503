"""User state cells of stateful ParDos, with each bundle's writes staged until it commits.

A cell is identified by an opaque tuple (the state service uses (kind, transform, state id,
encoded key, encoded window)). Bag cells hold encoded chunks in append order; ordered-list
cells hold (sort key, encoded entry) pairs; map cells (multimap state: the SDKs' map, set and
multimap state) hold encoded map key -> its encoded chunks, the map keys in the order each got
its first chunk since it was last absent. A bundle's first write to a cell copies the committed
contents into the bundle's staging area; its reads see the staged copy. Commit publishes the
staged cells, discard (a failed bundle, to be retried) drops them.
"""

from __future__ import annotations


class UserStateStore:
    def __init__(self):
        self._committed: dict[tuple, list | dict] = {}
        self._staged: dict[str, dict[tuple, list | dict]] = {}

    # -- reads -------------------------------------------------------------------------------
    def read(self, bundle: str, cell: tuple) -> list:
        contents = self._current(bundle, cell)
        return list(contents) if contents else []

    def read_sorted(self, bundle: str, cell: tuple, start: int | None = None, end: int | None = None) -> list:
        """Ordered-list entries with start <= sort key < end, by sort key (stable for equal keys)."""
        entries = [e for e in self.read(bundle, cell) if _in_range(e[0], start, end)]
        return sorted(entries, key=lambda e: e[0])

    def read_map(self, bundle: str, cell: tuple) -> dict[bytes, list[bytes]]:
        """A map cell: map key -> its chunks (a copy), in the map keys' order."""
        contents = self._current(bundle, cell)
        return {k: list(v) for k, v in contents.items()} if contents else {}

    def read_map_key(self, bundle: str, cell: tuple, map_key: bytes) -> list[bytes] | None:
        """The chunks of one map key; None when the key is absent."""
        contents = self._current(bundle, cell)
        chunks = contents.get(map_key) if contents else None
        return None if chunks is None else list(chunks)

    def _current(self, bundle: str, cell: tuple):
        staged = self._staged.get(bundle, {})
        return staged[cell] if cell in staged else self._committed.get(cell)

    # -- staged writes -----------------------------------------------------------------------
    def append(self, bundle: str, cell: tuple, items: list) -> None:
        self._list(bundle, cell).extend(items)

    def clear(self, bundle: str, cell: tuple) -> None:
        """Empty the cell (a bag, an ordered list, or a whole map)."""
        current = self._current(bundle, cell)
        self._staged.setdefault(bundle, {})[cell] = {} if isinstance(current, dict) else []

    def clear_range(self, bundle: str, cell: tuple, start: int, end: int) -> None:
        entries = self._list(bundle, cell)
        entries[:] = [e for e in entries if not _in_range(e[0], start, end)]

    def map_append(self, bundle: str, cell: tuple, map_key: bytes, chunk: bytes) -> None:
        """Append a chunk to a map key's values; the key is present from then on, even when the
        chunk is empty (values that encode to no bytes, as a Java set's)."""
        self._map(bundle, cell).setdefault(map_key, []).append(chunk)

    def map_remove(self, bundle: str, cell: tuple, map_key: bytes) -> None:
        self._map(bundle, cell).pop(map_key, None)

    def _list(self, bundle: str, cell: tuple) -> list:
        contents = self._writable(bundle, cell, list)
        assert isinstance(contents, list), f"{cell} is a map cell"
        return contents

    def _map(self, bundle: str, cell: tuple) -> dict[bytes, list[bytes]]:
        contents = self._writable(bundle, cell, dict)
        assert isinstance(contents, dict), f"{cell} is not a map cell"
        return contents

    def _writable(self, bundle: str, cell: tuple, kind: type) -> list | dict:
        staged = self._staged.setdefault(bundle, {})
        if cell in staged and not staged[cell] and not isinstance(staged[cell], kind):
            staged[cell] = kind()  # (a cleared cell: a clear does not know the kind of cell)
        elif cell not in staged:
            committed = self._committed.get(cell)
            if committed is None:
                staged[cell] = kind()
            elif isinstance(committed, dict):
                staged[cell] = {k: list(v) for k, v in committed.items()}
            else:
                staged[cell] = list(committed)
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

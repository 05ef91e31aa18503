"""Side inputs per window and pane: what consumers of a side-input PCollection see, per side window.

In batch a side input is read once its producer has finished, whole, unless it is triggered:
its producer may have fired several panes per window, and a reader sees the latest of each
window (what Python's CombineGlobally relies on to inject its default: one value). In
streaming it is read while it grows. In both cases the runner keeps, per window, what the
model lets a DoFn see:
- elements that came out of a triggered GroupByKey (they carry a PaneInfo, fired under the
  side PCollection's own windowing: the decoder gives their pane index) replace the
  window's contents pane by pane: only the latest fired pane (the highest pane index seen
  for the window) is visible, which is the latest accumulated value in accumulating mode and
  the latest pane alone in discarding mode;
- elements with the unknown pane (not from a GroupByKey) simply accumulate.
Panes are told apart by their index alone: Java materializes every view through a GroupByKey
on a single key, where that is exactly the latest pane; a side input fed straight by a triggered
GroupByKey over several keys (whose panes are numbered per key) shows, per window, only the
elements with the highest index seen.
A side window is *ready* once a pane has fired for it, or once the side watermark has passed
its end (then a window that never got data resolves to the view's default). The manager asks
``fired``; the watermark it knows itself.

The engine stays free of coders: ``decode(element) -> ([encoded window], pane index or None)``
is supplied by the executor.
"""

from __future__ import annotations

from collections.abc import Callable


class SideInputBuffer:
    def __init__(self, decode: Callable[[bytes], tuple[list[bytes], int | None]]):
        self.decode = decode
        self.windows: dict[bytes, list[bytes]] = {}  # encoded window -> visible elements
        self.panes: dict[bytes, int] = {}  # encoded window -> index of its latest fired pane
        #: bumped whenever the visible contents change, so readers rebuild their index only then
        self.version = 0

    def add(self, elements: list[bytes]) -> None:
        for element in elements:
            windows, index = self.decode(element)
            for w in windows:
                if index is None:
                    self.windows.setdefault(w, []).append(element)
                    continue
                latest = self.panes.get(w)
                if latest is None or index > latest:  # a newer pane supersedes the window's contents
                    self.panes[w] = index
                    self.windows[w] = [element]
                elif index == latest:  # more of the latest pane
                    self.windows[w].append(element)
                # an older pane than the latest: already superseded
        self.version += 1

    def fired(self, window: bytes) -> bool:
        """A pane has fired for the window (triggered side input): it is ready."""
        return window in self.panes

    def contents(self) -> dict[bytes, list[bytes]]:
        """A snapshot: encoded window -> the elements a bundle reading the side input sees."""
        return {w: list(elements) for w, elements in self.windows.items()}

"""A stateful DoFn with an event-time timer (SEMANTICS 7): state is scoped per key, per window and
per transform; a timer set to the window's max timestamp fires once, when the watermark passes it,
with the state still readable; its outputs carry the timer's timestamp and lie in the window of
the elements that set it. Setting the timer again replaces it (one firing per key and window)."""

from __future__ import annotations

from conformance.model.batch import Elem, key_identity


def accumulate(elems: list[Elem]) -> list[Elem]:
    """Per key and window, a bag, a sum and a max of the values, emitted by the timer as
    (key, count), (key, sum), (key, max) at the window's max timestamp. The pane of a timer's
    output is not fixed by the model (None)."""
    scopes: dict = {}
    for e in elems:
        key, value = e.value
        scopes.setdefault((key_identity(key), e.window), (key, []))[1].append(value)
    out = []
    for (_, window), (key, values) in scopes.items():
        for v in (len(values), sum(values), max(values)):
            out.append(Elem((key, v), window.max_timestamp, window, None))
    return out

"""A memo of Beam's ``get_signature`` for plain Python functions and methods.

Building a pipeline asks for the same signatures over and over: every ParDo's construction, its
``to_runner_api`` and the SDK harness's bundle processors inspect every method of every DoFn
(``userstate.get_dofn_specs``), tens of thousands of ``inspect.signature`` calls per case, a
large share of a small case's cost in process. A plain function's signature is a pure function of
its code, defaults, keyword defaults and annotations (``inspect._signature_from_function``), so
it is remembered under the function, together with exactly those, and computed again whenever any
of them changed. Anything else (builtins, partials, classes, wrapped functions, a function with a
``__signature__`` of its own) goes to Beam's function as before. ``inspect.Signature`` is
immutable, so handing out the same one twice is not observable.
"""

from __future__ import annotations

import threading
import types
import weakref
from collections.abc import Callable

from apache_beam.transforms import core, ptransform, util
from apache_beam.typehints import decorators

# Beam's modules that hold get_signature under their own name (``from ... import get_signature``)
_HOLDERS = (decorators, core, ptransform, util)
# attributes inspect.signature consults on a function before its code (unwrap, __signature__,
# functools.partialmethod): a function carrying one is not memoised
_OVERRIDES = ("__wrapped__", "__signature__", "_partialmethod")

#: Beam's own get_signature (what the memo computes with)
BEAM_GET_SIGNATURE = decorators.get_signature
_lock = threading.Lock()


def _snapshot(mapping: dict | None) -> tuple | None:
    return None if mapping is None else tuple(mapping.items())


def _unchanged(snapshot: tuple | None, mapping: dict | None) -> bool:
    """``mapping`` holds what it held at ``snapshot`` (keys equal, values the same objects)."""
    if snapshot is None or mapping is None:
        return snapshot is None and mapping is None
    if len(snapshot) != len(mapping):
        return False
    return all(key in mapping and mapping[key] is value for key, value in snapshot)


class _Entry:
    """A function's signatures (unbound, bound) and what they were computed from."""

    __slots__ = ("code", "defaults", "kwdefaults", "annotations", "signatures")

    def __init__(self, func: types.FunctionType):
        self.code, self.defaults = func.__code__, func.__defaults__
        self.kwdefaults = _snapshot(func.__kwdefaults__)
        self.annotations = _snapshot(func.__annotations__)
        self.signatures: dict[bool, object] = {}

    def holds_for(self, func: types.FunctionType) -> bool:
        return (
            func.__code__ is self.code
            and func.__defaults__ is self.defaults
            and _unchanged(self.kwdefaults, func.__kwdefaults__)
            and _unchanged(self.annotations, func.__annotations__)
        )


class _Memo:
    def __init__(self, compute: Callable):
        self._compute = compute
        # weak: the lambdas of finished cases go
        self._entries: weakref.WeakKeyDictionary[types.FunctionType, _Entry] = weakref.WeakKeyDictionary()

    def __call__(self, func):
        bound = type(func) is types.MethodType
        plain = func.__func__ if bound else func
        if type(plain) is not types.FunctionType:
            return self._compute(func)
        attributes = plain.__dict__
        if attributes and any(name in attributes for name in _OVERRIDES):
            return self._compute(func)
        entry = self._entries.get(plain)
        if entry is None or not entry.holds_for(plain):
            entry = self._entries[plain] = _Entry(plain)
        signature = entry.signatures.get(bound)
        if signature is None:
            signature = entry.signatures[bound] = self._compute(func)
        return signature


def install() -> None:
    """Memoise get_signature in this process (idempotent)."""
    with _lock:
        if isinstance(decorators.get_signature, _Memo):
            return
        memo = _Memo(BEAM_GET_SIGNATURE)
        for module in _HOLDERS:
            if module.get_signature is BEAM_GET_SIGNATURE:
                module.get_signature = memo


__all__ = ["install"]

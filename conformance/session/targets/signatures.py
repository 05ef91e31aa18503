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


def _inputs(func: types.FunctionType) -> tuple:
    """What a plain function's signature is computed from, compared by identity."""
    kwdefaults = func.__kwdefaults__
    annotations = func.__annotations__
    return (
        func.__code__,
        func.__defaults__,
        None if kwdefaults is None else tuple(kwdefaults.items()),
        tuple(annotations.items()),
    )


def _same(a: tuple, b: tuple) -> bool:
    code_a, defaults_a, *items_a = a
    code_b, defaults_b, *items_b = b
    return code_a is code_b and defaults_a is defaults_b and all(map(_same_items, items_a, items_b))


def _same_items(x: tuple | None, y: tuple | None) -> bool:
    if x is None or y is None:
        return x is y
    return len(x) == len(y) and all(k1 == k2 and v1 is v2 for (k1, v1), (k2, v2) in zip(x, y, strict=True))


class _Memo:
    def __init__(self, compute: Callable):
        self._compute = compute
        # function -> (inputs, {bound?: signature}); weak so lambdas of finished cases go
        self._entries: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def __call__(self, func):
        bound = type(func) is types.MethodType
        plain = func.__func__ if bound else func
        if type(plain) is not types.FunctionType or any(name in plain.__dict__ for name in _OVERRIDES):
            return self._compute(func)
        inputs = _inputs(plain)
        entry = self._entries.get(plain)
        if entry is None or not _same(entry[0], inputs):
            entry = (inputs, {})
            self._entries[plain] = entry
        signature = entry[1].get(bound)
        if signature is None:
            signature = entry[1][bound] = self._compute(func)
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

"""Which cases are streaming, derived from what each does rather than marked by hand.

A case is streaming when its capability is a streaming one (capabilities.Capability.streaming), or
when its code builds a TestStream (``TestStream``, ``TaggedTestStream``, Beam's own) or asks for
the streaming option (``"--streaming"``): directly, or through a helper it calls that is defined in
the kit or in the case's own package, followed to any depth. The answer comes from the code's
names (its bytecode), before anything runs, so ``-m "not streaming"`` selects on it; the case
runner refuses a TestStream in a case not found streaming, so a miss here cannot pass silently.
"""

from __future__ import annotations

import inspect
import types

# names that build a TestStream, and the pipeline option that asks for streaming
STREAM_SOURCES = frozenset({"TestStream", "TaggedTestStream"})
STREAMING_OPTION = "--streaming"
_FOLLOWED_PACKAGES = ("conformance",)


def builds_a_stream(function) -> bool:
    """Does ``function`` (a case's test function) build a TestStream or ask for --streaming?"""
    function = _unwrapped(function)
    home = (getattr(function, "__module__", "") or "").split(".", 1)[0]
    return _Search(home).function(function)


def _unwrapped(function):
    """The test function itself: hypothesis's @given and functools wrappers hide it."""
    inner = getattr(getattr(function, "hypothesis", None), "inner_test", None)
    if inner is not None:
        function = inner
    return inspect.unwrap(function)


class _Search:
    def __init__(self, home_package: str):
        self.followed = (*_FOLLOWED_PACKAGES, home_package) if home_package else _FOLLOWED_PACKAGES
        self.seen: set[int] = set()

    def function(self, function) -> bool:
        code = getattr(function, "__code__", None)
        if code is None or id(code) in self.seen:
            return False
        self.seen.add(id(code))
        return self.code(code, getattr(function, "__globals__", {}))

    def code(self, code: types.CodeType, namespace: dict) -> bool:
        if STREAM_SOURCES & set(code.co_names):
            return True
        for const in code.co_consts:
            if const == STREAMING_OPTION or (isinstance(const, str) and const.startswith(STREAMING_OPTION + "=True")):
                return True
            if isinstance(const, types.CodeType) and self.code(const, namespace):
                return True  # a nested function, lambda or comprehension
        referenced = [namespace.get(name) for name in code.co_names]
        # helpers read as attributes of a module of ours (``streams.helper()``): the names the code
        # reads, looked up in that module
        for module in [v for v in referenced if isinstance(v, types.ModuleType) and self._ours(v.__name__)]:
            referenced += [getattr(module, name, None) for name in code.co_names]
        return any(self.value(v) for v in referenced)

    def value(self, value) -> bool:
        if isinstance(value, types.ModuleType) or not self._ours(getattr(value, "__module__", None)):
            return False
        if isinstance(value, type):
            return any(self.function(v) for v in vars(value).values() if inspect.isfunction(v))
        return inspect.isfunction(value) and self.function(value)

    def _ours(self, module) -> bool:
        return isinstance(module, str) and module.split(".", 1)[0] in self.followed

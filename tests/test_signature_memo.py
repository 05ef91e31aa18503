import functools
import inspect

import apache_beam as beam
from apache_beam.typehints import decorators

from conformance.session.targets import signatures
from conformance.session.targets.signatures import _Memo


def _counting():
    calls = []

    def compute(func):
        calls.append(func)
        return signatures.BEAM_GET_SIGNATURE(func)

    return _Memo(compute), calls


def test_a_function_is_inspected_once_while_it_is_unchanged():
    memo, calls = _counting()

    def f(a, b=1):
        pass

    assert memo(f) == inspect.signature(f)
    assert memo(f) is memo(f)
    assert len(calls) == 1


def test_a_bound_method_has_its_own_signature_without_self():
    memo, _ = _counting()

    class C:
        def process(self, element, ts=beam.DoFn.TimestampParam):
            pass

    bound = C().process
    assert memo(bound) == inspect.signature(bound)
    assert memo(C.process) == inspect.signature(C.process)
    assert list(memo(bound).parameters) == ["element", "ts"]


def test_changed_defaults_annotations_or_code_are_inspected_again():
    memo, calls = _counting()

    def f(a, *, k=2):
        pass

    memo(f)
    f.__defaults__ = (5,)
    assert memo(f) == inspect.signature(f)
    f.__kwdefaults__["k"] = 3
    assert memo(f).parameters["k"].default == 3
    f.__annotations__["a"] = int
    assert memo(f).parameters["a"].annotation is int

    def g(x, y):
        pass

    f.__code__ = g.__code__
    f.__defaults__ = None
    f.__kwdefaults__ = None
    assert list(memo(f).parameters) == ["x", "y"]
    assert len(calls) == 5


def test_wrapped_partial_and_builtin_callables_are_not_memoised():
    memo, calls = _counting()

    def f(a, b):
        pass

    @functools.wraps(f)
    def wrapper(*args):
        pass

    for callable_ in (wrapper, wrapper, functools.partial(f, 1), len, len):
        assert memo(callable_) == signatures.BEAM_GET_SIGNATURE(callable_)
    assert len(calls) == 5


def test_install_replaces_beams_name_everywhere_it_is_held():
    signatures.install()
    signatures.install()
    from apache_beam.transforms import core, ptransform, util

    assert isinstance(decorators.get_signature, _Memo)
    assert core.get_signature is decorators.get_signature is ptransform.get_signature is util.get_signature

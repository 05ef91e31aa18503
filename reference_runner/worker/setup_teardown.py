"""Which user functions in an SDK bundle processor have a lifecycle of their own (setup or
teardown): a processor holding one must be torn down when its job ends, never reused."""

from __future__ import annotations

from apache_beam.internal import pickler
from apache_beam.runners.worker import operations
from apache_beam.transforms import core


def without_setup_or_teardown(processor) -> bool:
    """True when no operation of ``processor`` (a bundle_processor.BundleProcessor) runs user
    code with a setup or teardown method of its own. Of operations of other kinds only plain
    data movers count as plain; anything else is taken to have a lifecycle. Unpickles the
    user functions: ask once per descriptor."""
    return all(_plain_operation(op) for op in processor.ops.values())


def _plain_operation(op) -> bool:
    # The compiled operations keep their user function private; their spec carries it pickled.
    if isinstance(op, (operations.DoOperation, operations.CombineOperation)):
        return _plain_fn(pickler.loads(op.spec.serialized_fn)[0])
    if isinstance(op, operations.PGBKCVOperation):
        return _plain_fn(op.combine_fn)
    return isinstance(op, _DATA_MOVERS)


def _plain_fn(fn) -> bool:
    if isinstance(fn, core.CombineValuesDoFn):  # its setup and teardown only call its CombineFn's
        return _plain_fn(fn.combinefn)
    for base in (core.DoFn, core.CombineFn):
        if isinstance(fn, base):
            return type(fn).setup is base.setup and type(fn).teardown is base.teardown
    return False


def _data_movers() -> tuple:
    from apache_beam.runners.worker import bundle_processor

    names = ("DataInputOperation", "DataOutputOperation")
    return (
        operations.FlattenOperation,
        operations.PGBKOperation,
        operations.ReadOperation,
        operations.ImpulseReadOperation,
        *(getattr(bundle_processor, n) for n in names),
    )


_DATA_MOVERS = _data_movers()

"""A settings record that is its own option table: each field of a frozen dataclass (knobs.Knobs,
spark/settings.SparkSettings) is declared with ``option(...)``, which keeps its default and its
type where a dataclass keeps them and puts beside them what the runner needs to take the setting
from users: the reader that checks a value, how a value is written, the help.

Everything users see is generated from that one declaration, so adding a setting is one edit:
the record's field, the runner's keyword parameter (``keyword_parameters``), its
``--PREFIX_NAME`` pipeline option (``add_arguments``), its place in a conformance target's help
(``target_syntax``), and the reading of values from all of these and from a Job API client
(``read``, ``job_options``)."""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any


class OptionError(ValueError):
    """A runner option (a knob, a Spark option) is unknown or has a value the runner does not take."""


@dataclass(frozen=True)
class Knob:
    read: Callable[[Any], Any]  # the value as typed or as text -> the setting; ValueError refuses it
    form: str  # how a value is written after NAME= (a target name) or the option (its metavar)
    expected: str  # what the error says a good value is
    help: str
    remote: bool = True  # may a Job API client set it (not: paths on the server's disk)
    repeated: bool = False  # as a pipeline option: one occurrence per item (a list)


def option(default: Any = dataclasses.MISSING, *, factory: Any = dataclasses.MISSING, **knob: Any) -> Any:
    """A field of a settings record, with its row of the option table (``Knob``'s fields) as the
    field's metadata; ``factory`` makes a mutable default."""
    return dataclasses.field(default=default, default_factory=factory, metadata={"knob": Knob(**knob)})


def table(record: type) -> dict[str, Knob]:
    """The option table of a settings record (its fields in order)."""
    return {f.name: f.metadata["knob"] for f in dataclasses.fields(record)}


def read(values: dict[str, Any], table: dict[str, Knob], prefix: str = "") -> dict[str, Any]:
    """Every option of ``table`` given (None: not given), read; OptionError names an unknown option
    or a bad value (as ``prefix`` + its name: how the user spelled it)."""
    out = {}
    for name, value in values.items():
        knob = table.get(name)
        if knob is None:
            raise OptionError(f"unknown runner option {prefix + name!r}; known: {', '.join(sorted(table))}")
        if value is None:
            continue
        try:
            out[name] = knob.read(value)
        except (TypeError, ValueError):
            raise OptionError(f"{prefix}{name} must be {knob.expected}, not {value!r}") from None
    return out


def split_spec(spec: str) -> dict[str, str]:
    """'seed=7,splits=random' (a target name's options) -> {'seed': '7', 'splits': 'random'}, as text."""
    return dict(part.partition("=")[::2] for part in spec.split(",") if part)


def job_options(options, prefix: str, names: Iterable[str]) -> dict[str, Any]:
    """The values a Job API client sent for the pipeline options ``--{prefix}{name}`` (a protobuf
    Struct of beam:option:OPTION:v1, as Beam's PortableRunner sends them), by name, as sent: a
    number, a string or a bool. Options not sent, or sent as null (unset), are left out."""
    values = {}
    for name in names:
        value = options.fields.get(f"beam:option:{prefix}{name}:v1")
        kind = value.WhichOneof("kind") if value is not None else None
        if kind not in (None, "null_value"):
            values[name] = getattr(value, kind)
    return values


def target_syntax(record: type, names: Iterable[str] | None = None) -> str:
    """How a target name writes the options ``names`` (default: all) of ``record``:
    'seed=N,bundle_size=whole|N|random,...'."""
    knobs = table(record)
    return ",".join(f"{name}={knobs[name].form}" for name in (knobs if names is None else names))


def add_arguments(parser, record: type, prefix: str) -> None:
    """Every option of ``record`` as a ``--{prefix}NAME`` argument of ``parser`` (a PipelineOptions
    class's), unset by default (None: the runner's argument or the record's default applies)."""
    defaults = record()
    for name, knob in table(record).items():
        default = getattr(defaults, name)
        default_text = f" (default {str(default).lower()})" if default not in (None, {}) else ""
        parser.add_argument(
            f"--{prefix}{name}",
            default=None,
            action="append" if knob.repeated else "store",
            metavar=knob.form,
            help=knob.help + default_text,
        )


def from_pipeline_options(view, record: type, prefix: str) -> dict[str, Any]:
    """The ``--{prefix}NAME`` values of a PipelineOptions view (``add_arguments``'), by name, as
    given (None: not given), for the record's ``parse``."""
    return {name: getattr(view, f"{prefix}{name}") for name in table(record)}


def keyword_parameters(record: type):
    """Decorates ``__init__(self, **values)``: its keyword parameters are the options of ``record``,
    each None unless given (then another source or the default applies). An unknown name is refused
    at once, as Python refuses an unexpected keyword; ``inspect.signature`` and ``help()`` show the
    parameters."""
    knobs = table(record)
    optional = {
        f.name: f.type if str(f.type).endswith("None") else f"{f.type} | None" for f in dataclasses.fields(record)
    }

    def decorate(init: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(init)
        def checked(self, **values: Any) -> None:
            unknown = sorted(set(values) - set(knobs))
            if unknown:
                raise TypeError(
                    f"{type(self).__name__}() got an unexpected keyword argument {unknown[0]!r}; "
                    f"its parameters: {', '.join(knobs)}"
                )
            init(self, **{name: values.get(name) for name in knobs})

        parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_ONLY)] + [
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=optional[name])
            for name in knobs
        ]
        setattr(checked, "__signature__", inspect.Signature(parameters))  # noqa: B010 (mypy: no such attribute)
        return checked

    return decorate

"""The targets the session runs cases against, for the test session: the registry (the
``beam_conformance.targets`` entry-point group and ``register()``), the Target base class, the kit's
own targets (reference, spark, grpc, beam-direct, beam-fnapi, each registered through the entry-point
group like any other), JobServerTarget, and the processes and SDK workers the session starts. Target
authors do not import this package: their public path is ``conformance.targets``, which re-exports
what they need from here.

A target spec is ``KIND`` or ``KIND:PARAMETERS`` (``grpc://HOST:PORT``, ``reference:bundle_size=1``).
"""

from __future__ import annotations

import difflib
import importlib.metadata
from collections.abc import Callable
from dataclasses import dataclass

from conformance.session.targets.base import Target, TargetSettings, TargetUnavailable
from conformance.session.targets.job_server import JobServerTarget

ENTRY_POINT_GROUP = "beam_conformance.targets"

Factory = Callable[[str, TargetSettings], Target]


@dataclass
class _Entry:
    source: str  # where it came from: "entry point NAME = VALUE" or "register() in MODULE"
    help_text: str
    factory: Factory | None = None
    entry_point: importlib.metadata.EntryPoint | None = None
    broken: str = ""  # why the entry point could not be loaded

    def load(self) -> Factory:
        if self.factory is None and not self.broken:
            assert self.entry_point is not None
            try:
                self.factory = self.entry_point.load()
                check_named(self.factory)
            except Exception as e:  # a broken plugin must not break the other targets
                self.factory = None
                self.broken = f"{type(e).__name__}: {e}"
        if self.factory is None:
            raise TargetUnavailable(f"the target's plugin ({self.source}) cannot be loaded: {self.broken}")
        return self.factory


_REGISTRY: dict[str, _Entry] = {}
_entry_points_loaded = False


def register(kind: str, factory: Factory, help_text: str | None = None) -> None:
    """Make ``--target KIND[:PARAMETERS]`` create ``factory(spec, settings)``. Registering the same
    factory again is harmless (a conftest.py may be imported by several pytest-xdist workers);
    registering another one under a taken kind is an error."""
    _load_entry_points()
    check_named(factory)
    existing = _REGISTRY.get(kind)
    if existing is not None and existing.factory is not factory:
        raise ValueError(f"target kind {kind!r} is already registered ({existing.source})")
    module = getattr(factory, "__module__", "?")
    _REGISTRY[kind] = _Entry(f"register() in {module}", help_text or _help_of(factory), factory=factory)


def check_named(factory) -> None:
    """A Target class must name itself (``name``: its results file and matrix column); a factory
    that is no class is checked on what it creates (create())."""
    if isinstance(factory, type) and issubclass(factory, Target) and not factory.name:
        raise ValueError(_unnamed(factory))


def _unnamed(cls: type) -> str:
    return (
        f"target class {cls.__module__}.{cls.__qualname__} does not name itself: give it a class attribute "
        "name = '...' (the name of its results file and its matrix column)"
    )


def _help_of(factory) -> str:
    text = getattr(factory, "help", None) or (factory.__doc__ or "").strip()
    return text.split("\n\n", 1)[0].replace("\n", " ").strip() or "(no description)"


def _load_entry_points() -> None:
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in _REGISTRY:
            continue  # two installed distributions claim one kind: the first found wins
        source = f"entry point {ep.name} = {ep.value}"
        entry = _Entry(source, "", entry_point=ep)
        try:
            entry.help_text = _help_of(entry.load())
        except TargetUnavailable:
            entry.help_text = f"(unavailable: {entry.broken})"
        _REGISTRY[ep.name] = entry


def kind_of(spec: str) -> str:
    return spec.split(":", 1)[0]


def create(spec: str, settings: TargetSettings) -> Target:
    _load_entry_points()
    entry = _REGISTRY.get(kind_of(spec))
    if entry is None:
        close = difflib.get_close_matches(kind_of(spec), _REGISTRY, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise TargetUnavailable(f"unknown target {spec!r}{hint}; known targets:\n{describe_all()}")
    target = entry.load()(spec, settings)
    if not target.name:
        raise TargetUnavailable(_unnamed(type(target)))
    return target


def kinds() -> list[str]:
    _load_entry_points()
    return sorted(_REGISTRY)


def describe_all() -> str:
    _load_entry_points()
    width = max((len(k) for k in _REGISTRY), default=12)
    return "\n".join(f"  {kind:<{width}}  {entry.help_text}" for kind, entry in sorted(_REGISTRY.items()))


__all__ = [
    "ENTRY_POINT_GROUP",
    "JobServerTarget",
    "Target",
    "TargetSettings",
    "TargetUnavailable",
    "create",
    "describe_all",
    "kinds",
    "register",
]

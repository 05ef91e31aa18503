"""One-bug copies of the reference runner, each registered as a target through register(): what
the generated pipelines must catch (tests/test_generated_pipelines.py). Each plants its bug while
the target is started and takes it out when it stops (the reference runner runs in this process)."""

from __future__ import annotations

import dataclasses

from conformance.session import targets
from conformance.session.targets.reference import ReferenceTarget
from reference_runner.engine import panes, triggers, userstate


class _Planted(ReferenceTarget):
    owner: object = None
    attribute = ""

    def planted(self, original):
        raise NotImplementedError

    def start(self) -> None:
        super().start()
        self._original = self.owner.__dict__[self.attribute]
        setattr(self.owner, self.attribute, self.planted(self._original))

    def stop(self) -> None:
        setattr(self.owner, self.attribute, self._original)
        super().stop()


class LatenessIgnored(_Planted):
    """Lateness: a window is collected at its end, as if the allowed lateness were 0."""

    name = "planted-lateness"
    owner, attribute = panes.TriggeredBuffer, "_gc_time"

    def planted(self, original):
        return lambda self, w: min(w.max_timestamp, panes.MAX_TIMESTAMP)


class CountOneLate(_Planted):
    """Triggers: AfterCount(n) fires only once it has seen n + 1 elements."""

    name = "planted-count"
    owner, attribute = triggers.AfterCount, "should_fire"

    def planted(self, original):
        return lambda self, st, ctx: st.count > self.count


class EmptyOnTimeDropped(_Planted):
    """Pane info: an ON_TIME pane with nothing new is left out, against the OnTimeBehavior
    FIRE_ALWAYS Python pipelines declare."""

    name = "planted-empty-on-time"
    owner, attribute = panes.TriggeredBuffer, "__init__"

    def planted(self, original):
        def init(buffer, group, *args, **kwargs):
            original(buffer, dataclasses.replace(group, empty_on_time=False), *args, **kwargs)

        return init


class BagForgetsEarlierBundles(_Planted):
    """State: a bundle's first append to a bag or combining cell starts from empty instead of from
    what earlier bundles committed, so a key and window keeps only its last bundle's values."""

    name = "planted-state-bundles"
    owner, attribute = userstate.UserStateStore, "append"

    def planted(self, original):
        def append(store, bundle, cell, items):
            staged = store._staged.setdefault(bundle, {})
            staged.setdefault(cell, []).extend(items)

        return append


PLANTED = [LatenessIgnored, CountOneLate, EmptyOnTimeDropped, BagForgetsEarlierBundles]
for cls in PLANTED:
    targets.register(cls.name, cls)

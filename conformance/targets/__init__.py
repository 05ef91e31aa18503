"""The public API for target authors: THE one path to import a target's building blocks from.

``from conformance.targets import Target, TargetSettings, TargetUnavailable, JobServerTarget, register``

The targets themselves, the registry and the processes behind them live in ``conformance.session.targets``
(the test session's machinery); this module re-exports what a target author uses, and nothing else
lives here. A target spec is ``KIND`` or ``KIND:PARAMETERS`` (``grpc://HOST:PORT``,
``reference:bundle_size=1``). Targets come in through one of two public paths, and the kit's own
targets use the first:

- the entry-point group ``beam_conformance.targets``. A distribution declares, in its
  pyproject.toml::

      [project.entry-points."beam_conformance.targets"]
      my-runner = "my_runner_conformance:MyRunnerTarget"

  where the object is a ``Target`` subclass (or any ``factory(spec, settings) -> Target``); its
  ``help`` attribute, else its docstring's first line, is what ``--target list`` shows.
- ``register(kind, factory, help_text)``, called from a ``conftest.py`` or a pytest plugin, for a
  target that lives in a test tree rather than in an installed distribution.
"""

from conformance.session.targets import ENTRY_POINT_GROUP, create, describe_all, kinds, register
from conformance.session.targets.base import Target, TargetSettings, TargetUnavailable
from conformance.session.targets.job_server import JobServerTarget

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

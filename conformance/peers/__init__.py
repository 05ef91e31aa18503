"""Targets for runners we did not write: Prism, Beam's Flink and Spark job servers, Beam's Dask runner.

They reach the suite the way a runner author's own target does, through the public
``beam_conformance.targets`` entry-point group (pyproject.toml), and fetch their artifacts into a
cache outside the repository (artifacts.py) at the versions pinned in pins.py.
"""

"""benchmarks.versions: the figures of two checkouts compared leaf by leaf."""

from benchmarks.versions import compare, leaves


def test_every_number_is_a_leaf_by_its_dotted_path():
    figures = {"jobs": 3, "per_job_seconds": {"reference": 0.5, "fnapi": 1.0}, "name": "x", "ok": True}
    assert leaves(figures) == {"jobs": 3.0, "per_job_seconds.reference": 0.5, "per_job_seconds.fnapi": 1.0}


def test_each_side_is_its_rounds_median_and_the_ratio_is_new_over_base():
    base = [{"t": 1.0}, {"t": 3.0}, {"t": 2.0}]
    new = [{"t": 1.0}, {"t": 1.0}, {"t": 9.0}]
    assert compare(base, new) == {"t": {"base": 2.0, "new": 1.0, "new_over_base": 0.5}}

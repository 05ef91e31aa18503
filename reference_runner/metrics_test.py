"""User metrics reported by several bundles merge into one value per metric (reference_runner/metrics.py)."""

from apache_beam.metrics import monitoring_infos as mi
from apache_beam.metrics.cells import BoundedTrieData, DistributionData, GaugeData
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.portability.api import beam_job_api_pb2
from apache_beam.runners.portability.portable_runner import PortableMetrics

from reference_runner.metrics import merge_user_metrics


def _trie(*paths):
    data = BoundedTrieData()
    for path in paths:
        data = data.combine(BoundedTrieData(singleton=tuple(path)))
    return data


def _query(infos):
    results = PortableMetrics(
        beam_job_api_pb2.GetJobMetricsResponse(
            metrics=beam_job_api_pb2.MetricResults(committed=merge_user_metrics(infos))
        )
    )
    return {
        kind: {m.key.metric.name: m.committed for m in found} for kind, found in results.query(MetricsFilter()).items()
    }


def test_every_metric_type_merges_across_bundles():
    infos = [
        mi.int64_user_counter("ns", "count", 2, ptransform="step"),
        mi.int64_user_counter("ns", "count", 3, ptransform="step"),
        mi.int64_user_distribution("ns", "dist", DistributionData(10, 2, 4, 6), ptransform="step"),
        mi.int64_user_distribution("ns", "dist", DistributionData(1, 1, 1, 1), ptransform="step"),
        mi.int64_user_gauge("ns", "gauge", GaugeData(7, timestamp=20), ptransform="step"),
        mi.int64_user_gauge("ns", "gauge", GaugeData(9, timestamp=10), ptransform="step"),
        mi.user_set_string("ns", "labels", {"a", "b"}, ptransform="step"),
        mi.user_set_string("ns", "labels", {"b", "c"}, ptransform="step"),
        mi.user_bounded_trie("ns", "paths", _trie(["x", "y"]), ptransform="step"),
        mi.user_bounded_trie("ns", "paths", _trie(["x", "z"], ["w"]), ptransform="step"),
    ]
    merged = merge_user_metrics(infos)
    assert len(merged) == 5
    got = _query(infos)
    assert got["counters"] == {"count": 5}
    d = got["distributions"]["dist"]
    assert (d.sum, d.count, d.min, d.max) == (11, 3, 1, 6)
    assert got["gauges"]["gauge"].value == 7  # the latest (timestamp 20), not the last reported
    assert got["string_sets"]["labels"] == {"a", "b", "c"}
    assert got["bounded_tries"]["paths"].get_result() == {("x", "y", False), ("x", "z", False), ("w", False)}


def test_metrics_of_different_steps_stay_apart():
    infos = [
        mi.user_set_string("ns", "labels", {"a"}, ptransform="one"),
        mi.user_set_string("ns", "labels", {"b"}, ptransform="two"),
    ]
    assert sorted(sorted(mi.extract_string_set_value(i)) for i in merge_user_metrics(infos)) == [["a"], ["b"]]

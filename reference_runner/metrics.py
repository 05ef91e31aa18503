"""User metrics of many bundles -> one MonitoringInfo per metric (same URN and labels).

Beam's ``monitoring_infos.consolidate`` sums counters and combines distributions but passes
every other type through unmerged, and a result reading several infos of one metric keeps
only the last (PortableMetrics builds a dict). So gauges, string sets and bounded tries are
merged here: a gauge keeps its latest value, a string set is the union, a bounded trie the
trie merge (trimmed to its bound, as the SDK does within a worker).
"""

from __future__ import annotations

from apache_beam.metrics import monitoring_infos as mi
from apache_beam.portability.api import metrics_pb2


def merge_user_metrics(infos) -> list:
    """The user MonitoringInfos among ``infos``, one per metric."""
    merged: dict = {}
    for info in mi.consolidate([i for i in infos if mi.is_user_monitoring_info(i)]):
        key = mi.to_key(info)
        merged[key] = info if key not in merged else _merge(merged[key], info)
    return list(merged.values())


def _merge(a, b):
    if mi.is_gauge(a):
        return b if mi.extract_gauge_value(b)[0] >= mi.extract_gauge_value(a)[0] else a
    if mi.is_string_set(a):
        union = sorted(mi.extract_string_set_value(a) | mi.extract_string_set_value(b))
        return _with_payload(a, mi.user_set_string("", "", union).payload)
    if mi.is_bounded_trie(a):
        trie = mi.extract_bounded_trie_value(a).combine(mi.extract_bounded_trie_value(b))
        return _with_payload(a, trie.to_proto().SerializeToString())
    raise ValueError(f"cannot merge two reports of user metric {a.urn} of type {a.type}")


def _with_payload(info, payload: bytes):
    return metrics_pb2.MonitoringInfo(urn=info.urn, type=info.type, labels=dict(info.labels), payload=payload)

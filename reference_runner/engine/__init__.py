"""The reference runner's engine: stages, pending elements, watermarks and bundles.

A leaf package: it never imports protos or gRPC. Elements are opaque encoded bytes except
where the model needs their parts (grouping, a stateful stage's keys and windows, side-input
windows and panes), which functions supplied by the executor extract.

manager.ElementManager schedules and routes; each stage's own state lives in stages.py,
keyed.py (stateful ParDo heads) and teststream.py; spec.py is the data they exchange with the
executor.
"""

"""The reference runner's engine: stages, pending elements, watermarks and bundles.

A leaf package: it never imports protos or gRPC. Elements are opaque encoded bytes except
where the model needs their parts (grouping), which a codec supplied by the executor
extracts.
"""

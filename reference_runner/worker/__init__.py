"""Fn API side of the runner: stage descriptors, coders on the wire, the state service and
the SDK workers that run user code."""

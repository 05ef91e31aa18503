"""Which SDK wrote a part of a pipeline, where the runner must treat SDKs differently.

An environment names its SDK in its ``beam:version:sdk_base:IMAGE`` capability (Go:
``go:apache/beam_go_sdk:V``, Java: ``apache/beam_java17_sdk:V``, Python:
``apache/beam_python3.11_sdk:V``). A Python pipeline built for an in-process runner has a default
environment with no capabilities at all: it is Python's if it runs Python user code.

Two things depend on the SDK:

- **How a TestStream's events are encoded.** The Runner API says only that
  ``TimestampedElement.encoded_element`` is "the element encoded" with the payload's coder. Each
  SDK's own TestStream code settles the context:
  Python's ``apache_beam/testing/test_stream.py`` writes ``element_coder.encode(value)`` (the outer
  context) and Java's ``TestStreamTranslation`` writes ``CoderUtils.encodeToByteArray(coder,
  value)`` (also the outer context; it reads them back with ``decodeFromByteArray``). Go's
  ``pkg/beam/testing/teststream`` writes each element with ``beam.NewElementEncoder``, the
  harness's element encoder, and Go's coders have one context only, the nested one: a string or
  a byte slice gets its varint length first, and a ``beam:go:coder:custom:v1`` value gets a
  varint length before the custom coder's bytes (``exec/coder.go``, ``customEncoder``). So a Go
  TestStream's events are read in the nested context, every other SDK's in the outer one.
- **How the SDK re-encodes elements for the runner** where the runner cannot (graph/transcode.py):
  Beam's Python SDK has an identity DoFn for it (``beam:dofn:identity:0.1``); the Go and Java
  harnesses (and Python's) run a ``beam:transform:flatten:v1`` inside a bundle, whose output
  leaves the bundle with its own PCollection's coder, as Prism asks of them.
"""

from __future__ import annotations

from apache_beam.portability.api import beam_runner_api_pb2

from reference_runner.graph import urns

PYTHON, JAVA, GO, TYPESCRIPT = "python", "java", "go", "typescript"

# the image names of Beam's SDK containers, as their sdk_base capability carries them
_IMAGES = {"beam_go_sdk": GO, "beam_java": JAVA, "beam_python": PYTHON, "typescript": TYPESCRIPT}


def sdk_of(components: beam_runner_api_pb2.Components, env_id: str) -> str:
    """The SDK of environment ``env_id``, "" if neither it nor its transforms tell."""
    env = components.environments.get(env_id) if env_id else None
    if env is None:
        return ""
    for capability in env.capabilities:
        if capability.startswith(urns.SDK_BASE_CAPABILITY):
            image = capability.removeprefix(urns.SDK_BASE_CAPABILITY)
            return next((sdk for name, sdk in _IMAGES.items() if name in image), "")
    runs_python = any(
        t.environment_id == env_id and user_function(t) in urns.PYTHON_USER_FUNCTIONS
        for t in components.transforms.values()
    )
    return PYTHON if runs_python else ""


def user_function(t: beam_runner_api_pb2.PTransform) -> str | None:
    """The URN of a transform's DoFn or CombineFn, None if it has neither."""
    if t.spec.urn in urns.PARDO_LIKE:
        return beam_runner_api_pb2.ParDoPayload.FromString(t.spec.payload).do_fn.urn
    if t.spec.urn in urns.COMBINE_TRANSFORMS:
        return beam_runner_api_pb2.CombinePayload.FromString(t.spec.payload).combine_fn.urn
    return None


def test_stream_events_nested(
    components: beam_runner_api_pb2.Components, stream: beam_runner_api_pb2.PTransform
) -> bool:
    """Are this TestStream's events encoded in the nested context (Go's), not the outer one?
    Its SDK is its own environment's; a TestStream that names none belongs to the SDK of every
    environment of the pipeline, if they share one."""
    if stream.environment_id:
        return sdk_of(components, stream.environment_id) == GO
    sdks = {sdk_of(components, env_id) for env_id in components.environments}
    return sdks == {GO}

"""Reading the pipelines a run captured (--capture-pipelines DIR): every TestStream payload decoded
with the reference runner's own standard-coder reader, as a runner of another SDK would have to.

A TestStream whose coder is not standard (a runner of another SDK cannot decode its events:
apache/beam#19934) is allowed only where its case declared python_only, which the capture holds
as the TestStream transform's annotation (conformance/authoring/streams.py). Each output
PCollection must have the payload's coder (findings/flink.md F2)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from apache_beam.coders.coder_impl import create_InputStream
from apache_beam.portability.api import beam_runner_api_pb2

from conformance.authoring.streams import PYTHON_ONLY_ANNOTATION
from conformance.capabilities import TEST_STREAM_URN
from reference_runner.worker.codecs import Coders, OpaqueCoder


@dataclass
class StreamsChecked:
    pipelines: int = 0
    streams: int = 0
    events_decoded: int = 0
    python_only: list[str] = field(default_factory=list)  # "<file>: <transform>: <reason>"
    problems: list[str] = field(default_factory=list)


def _tree(components, coder_id: str) -> tuple:
    """A coder as (urn, payload, components...), whatever its id."""
    proto = components.coders[coder_id]
    return (proto.spec.urn, proto.spec.payload, *(_tree(components, c) for c in proto.component_coder_ids))


def check_pipeline(name: str, pipeline: beam_runner_api_pb2.Pipeline, into: StreamsChecked) -> None:
    components = pipeline.components
    coders = Coders(components)
    into.pipelines += 1
    for tid, transform in sorted(components.transforms.items()):
        if transform.spec.urn != TEST_STREAM_URN:
            continue
        into.streams += 1
        where = f"{name}: {transform.unique_name or tid}"
        payload = beam_runner_api_pb2.TestStreamPayload.FromString(transform.spec.payload)
        declared = transform.annotations.get(PYTHON_ONLY_ANNOTATION)
        expected = _tree(components, payload.coder_id)
        for tag, pcoll in sorted(transform.outputs.items()):
            if _tree(components, components.pcollections[pcoll].coder_id) != expected:
                into.problems.append(
                    f"{where}: output {tag!r} has coder {components.pcollections[pcoll].coder_id}, not the "
                    f"payload's {payload.coder_id}: a runner decodes the events with one and types them with the other"
                )
        elements = [e for ev in payload.events if ev.HasField("element_event") for e in ev.element_event.elements]
        try:
            impl = coders.coder(payload.coder_id).get_impl()
        except OpaqueCoder as e:
            if declared:
                into.python_only.append(f"{where}: {declared.decode('utf-8')}")
            else:
                into.problems.append(f"{where}: a runner of another SDK cannot decode its events: {e}")
            continue
        if declared:
            into.problems.append(f"{where}: declares python_only, yet its coder is standard")
        decoded = 0
        for element in elements:
            # one whole value per element: a coder that reads a prefix of another coder's bytes fails here
            stream = create_InputStream(element.encoded_element)
            try:
                impl.decode_from_stream(stream, False)
            except Exception as e:
                into.problems.append(f"{where}: an event does not decode with coder {payload.coder_id}: {e}")
                continue
            if stream.size():
                into.problems.append(f"{where}: an event has {stream.size()} bytes left after its value")
                continue
            decoded += 1
        if decoded != len(elements):
            into.problems.append(f"{where}: {decoded} values decoded whole from {len(elements)} element events")
        into.events_decoded += decoded


def check_directory(directory: Path) -> StreamsChecked:
    """Every captured pipeline (*.pb under ``directory``)."""
    checked = StreamsChecked()
    for path in sorted(directory.rglob("*.pb")):
        pipeline = beam_runner_api_pb2.Pipeline.FromString(path.read_bytes())
        check_pipeline(str(path.relative_to(directory)), pipeline, checked)
    return checked

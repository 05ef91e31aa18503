"""The control requests the runner sends about a running bundle, whatever carries them."""

from __future__ import annotations

import abc

from apache_beam.portability.api import beam_fn_api_pb2


class BundleControl(abc.ABC):
    """Split, progress and finalization over ``_control(**request)``, which sends one
    InstructionRequest and returns its InstructionResponse (raising BundleFailed on an error)."""

    @abc.abstractmethod
    def _control(self, **request) -> beam_fn_api_pb2.InstructionResponse:
        """Each worker kind says how its instructions travel (in process, or over gRPC)."""

    def split(self, instruction_id: str, transform_id: str, fraction: float, estimated_elements: int):
        """Ask the running bundle to stop early; returns the ProcessBundleSplitResponse."""
        desired = beam_fn_api_pb2.ProcessBundleSplitRequest.DesiredSplit(
            fraction_of_remainder=fraction, estimated_input_elements=estimated_elements
        )
        return self._control(
            process_bundle_split=beam_fn_api_pb2.ProcessBundleSplitRequest(
                instruction_id=instruction_id, desired_splits={transform_id: desired}
            )
        ).process_bundle_split

    def progress(self, instruction_id: str) -> list:
        """The running bundle's monitoring infos so far."""
        return list(
            self._control(
                process_bundle_progress=beam_fn_api_pb2.ProcessBundleProgressRequest(instruction_id=instruction_id)
            ).process_bundle_progress.monitoring_infos
        )

    def finalize(self, instruction_id: str) -> None:
        """Run the finalization callbacks of a committed bundle that asked for them."""
        self._control(finalize_bundle=beam_fn_api_pb2.FinalizeBundleRequest(instruction_id=instruction_id))

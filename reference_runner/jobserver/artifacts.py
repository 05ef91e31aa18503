"""Artifact staging (the server pulls each environment's dependencies from the client) and
retrieval (workers read them back). Files land under one directory per job; a name that would
leave it is refused, and so is an artifact over the size limit."""

from __future__ import annotations

import os
import re
import shutil
import threading

import grpc
from apache_beam.portability import common_urns
from apache_beam.portability.api import beam_artifact_api_pb2, beam_artifact_api_pb2_grpc, beam_runner_api_pb2

FILE_URN = common_urns.artifact_types.FILE.urn
STAGING_TO_URN = common_urns.artifact_roles.STAGING_TO.urn
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,199}$")
CHUNK = 1 << 20


class ArtifactRefused(ValueError):
    pass


def safe_name(name: str) -> str:
    """A staged name as given, if it is a plain file name; refused otherwise (no paths, no '..')."""
    if not _SAFE_NAME.match(name or "") or name in (".", ".."):
        raise ArtifactRefused(
            f"refusing artifact name {name[:80]!r}: only a plain file name "
            "(letters, digits, '.', '_', '+', '-'; at most 200 characters) may be staged"
        )
    return name


class StagingSessions:
    """Pipelines prepared but not yet run, waiting for their artifacts."""

    def __init__(self, root: str, max_artifact_bytes: int):
        self.root = root
        self.max_artifact_bytes = max_artifact_bytes
        self._sessions: dict[str, beam_runner_api_pb2.Pipeline] = {}
        self._staged: dict[str, threading.Event] = {}
        self._lock = threading.Lock()

    def open(self, token: str, pipeline: beam_runner_api_pb2.Pipeline) -> None:
        with self._lock:
            self._sessions[token] = pipeline
            self._staged[token] = threading.Event()
            if not any(env.dependencies for env in pipeline.components.environments.values()):
                self._staged[token].set()

    def pipeline(self, token: str, wait: float = 0) -> beam_runner_api_pb2.Pipeline | None:
        """The prepared pipeline, with dependencies rewritten to staged files once staging ended."""
        with self._lock:
            staged = self._staged.get(token)
        if staged is not None and wait:
            staged.wait(wait)
        with self._lock:
            return self._sessions.get(token)

    def close(self, token: str) -> None:
        """Staging for ``token`` is over (its job runs, its files stay until ``remove``)."""
        with self._lock:
            self._sessions.pop(token, None)
            self._staged.pop(token, None)

    def remove(self, token: str) -> None:
        """Nothing will read ``token``'s files again: delete them."""
        self.close(token)
        shutil.rmtree(os.path.join(self.root, token), ignore_errors=True)  # (tokens are ours)

    def stage(self, token: str):
        """The server's side of one ReverseArtifactRetrievalService conversation, as a generator:
        it yields each request for the client and is sent the client's answer to it (the resolve
        response, or an artifact's chunks up to ``is_last``)."""
        pipeline = self.pipeline(token)
        if pipeline is None:
            raise ArtifactRefused(f"unknown staging token {token[:80]!r}")
        directory = os.path.join(self.root, token)
        os.makedirs(directory, exist_ok=True)
        # Every environment is resolved, one with no dependencies too, as Beam's own staging
        # service does: a conversation with no exchange at all ends as soon as it starts, and the
        # TypeScript SDK's client, which never half-closes, then sometimes misses its end and
        # waits forever after "Staging artifacts" (about 1 submission in 5).
        for env_id, env in pipeline.components.environments.items():
            [resolved] = yield beam_artifact_api_pb2.ArtifactRequestWrapper(
                resolve_artifact=beam_artifact_api_pb2.ResolveArtifactsRequest(artifacts=env.dependencies)
            )
            staged = []
            for index, artifact in enumerate(resolved.resolve_artifact_response.replacements):
                name = safe_name(_staged_name(artifact, index))
                path = os.path.join(directory, f"{env_id[:40].replace(os.sep, '_')}-{index}-{name}")
                self._write(
                    path,
                    (
                        yield beam_artifact_api_pb2.ArtifactRequestWrapper(
                            get_artifact=beam_artifact_api_pb2.GetArtifactRequest(artifact=artifact)
                        )
                    ),
                )
                staged.append(
                    beam_runner_api_pb2.ArtifactInformation(
                        type_urn=FILE_URN,
                        type_payload=beam_runner_api_pb2.ArtifactFilePayload(path=path).SerializeToString(),
                        role_urn=artifact.role_urn,
                        role_payload=artifact.role_payload,
                    )
                )
            del env.dependencies[:]
            env.dependencies.extend(staged)
        with self._lock:
            if token in self._staged:
                self._staged[token].set()

    def _write(self, path: str, chunks) -> None:
        written = 0
        with open(path, "wb") as f:
            for chunk in chunks:
                data = chunk.get_artifact_response.data
                written += len(data)
                if written > self.max_artifact_bytes:
                    f.close()
                    os.remove(path)
                    raise ArtifactRefused(
                        f"artifact {os.path.basename(path)} is larger than the limit of {self.max_artifact_bytes} bytes"
                    )
                f.write(data)


def _staged_name(artifact: beam_runner_api_pb2.ArtifactInformation, index: int) -> str:
    if artifact.role_urn == STAGING_TO_URN:
        return beam_runner_api_pb2.ArtifactStagingToRolePayload.FromString(artifact.role_payload).staged_name
    return f"artifact-{index}"


class StagingService(beam_artifact_api_pb2_grpc.ArtifactStagingServiceServicer):
    def __init__(self, sessions: StagingSessions):
        self.sessions = sessions

    def ReverseArtifactRetrievalService(self, responses, context):
        # Headers first, whatever follows: a call that ends before any request for the client
        # would otherwise be answered trailers-only, and the TypeScript SDK's client (protobuf-ts
        # over grpc-js) then waits forever for headers that never come.
        context.send_initial_metadata(())
        first = next(responses, None)
        if first is None or not first.staging_token:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "the first message must carry the staging token")
        assert first is not None  # context.abort raised
        try:
            conversation = self.sessions.stage(first.staging_token)
            request = next(conversation)
            while True:
                yield request
                request = conversation.send(_answer(request, responses))
        except StopIteration:
            return
        except ArtifactRefused as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(e))


def _answer(request, responses) -> list:
    """The client's messages answering ``request``."""
    if request.HasField("resolve_artifact"):
        message = next(responses, None)
        if message is None or not message.HasField("resolve_artifact_response"):
            raise ArtifactRefused("expected the client's resolve_artifact_response")
        return [message]
    chunks = []
    for message in responses:
        chunks.append(message)
        if message.is_last:
            return chunks
    raise ArtifactRefused("the client closed the stream in the middle of an artifact")


class RetrievalService(beam_artifact_api_pb2_grpc.ArtifactRetrievalServiceServicer):
    """Serves staged files to workers; nothing outside the staging root."""

    def __init__(self, root: str):
        self.root = os.path.realpath(root)

    def ResolveArtifacts(self, request, context):
        return beam_artifact_api_pb2.ResolveArtifactsResponse(replacements=request.artifacts)

    def GetArtifact(self, request, context):
        artifact = request.artifact
        if artifact.type_urn != FILE_URN:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"only staged files are served, not {artifact.type_urn}")
        path = os.path.realpath(beam_runner_api_pb2.ArtifactFilePayload.FromString(artifact.type_payload).path)
        if os.path.commonpath([path, self.root]) != self.root or not os.path.isfile(path):
            context.abort(grpc.StatusCode.PERMISSION_DENIED, "that file was not staged here")
        with open(path, "rb") as f:
            while data := f.read(CHUNK):
                yield beam_artifact_api_pb2.GetArtifactResponse(data=data)

"""Batched jobs: independent cases packed into one pipeline, one job per batch, on targets where a
job's fixed cost dominates (a JVM job server takes seconds to plan and start any job).

How it works:
- The plan is made from the collected cases: consecutive cases of one module, in chunks of twice the
  batch size (the unit pytest-xdist hands to one worker), grouped by batch or streaming mode.
  A case that can never share a job stays out of every batch: a case the expectations list as a
  known failure (it may fail its whole job), a property case (one job per example), a case
  taking fixtures other than ``runner``, a case marked skip or xfail.
- When pytest reaches the first case of a batch, every case of the batch is built, each by its
  own body on a thread of its own, up to the point where it calls ``runner.run``. A case that does
  something a shared job cannot give it raises RunsAlone while it builds (its own pipeline options
  or shape, a pipeline expected to fail, a second pipeline, the job's metrics, a TestStream or
  processing time: conformance/authoring/sharing.py) and runs alone in its own turn. The rest are
  grafted into one pipeline and run as one job; each body then resumes with the job's result and
  reads its own checks, which in a shared job record their diffs instead of failing the job.
- Verdicts. A case that passed in the batch passes. A case that failed in the batch runs again
  alone in its own turn: its verdict is the solo one, and when it passes alone it fails anyway,
  naming the batch, because a correct runner runs independent parts of a pipeline as it runs each
  alone (a bug that shows only in a shared job). A batch whose job fails as a whole is split in
  two and each half run again, down to single cases, which run alone in their own turn; so one
  case that crashes its job costs its neighbours a few jobs, never their verdicts.

Batching needs the target's workers in this process (the checks' diffs are read from memory), so
it is off where they are not.
"""

from __future__ import annotations

import contextlib
import inspect
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

import apache_beam as beam
import pytest

from conformance.authoring import checks, shapes, sharing
from conformance.authoring.case_runner import CaseRunner, RunResult, all_metrics

# how long one case may take to build its pipeline, and to read its result, inside a batch
BODY_TIMEOUT_S = 120.0
_TIMED_OUT = "it did not finish within"


def chunks(nodeids: list[str], size: int) -> dict[str, str]:
    """nodeid -> the chunk it is scheduled in: consecutive cases of one module, 2 x ``size`` at a
    time. The xdist scheduler and every worker compute it alike from the collected node ids, so a
    worker holds every case of the batches it runs."""
    keys: dict[str, str] = {}
    position: dict[str, int] = {}
    for nodeid in nodeids:
        module = nodeid.split("::", 1)[0]
        index = position.get(module, 0)
        position[module] = index + 1
        keys[nodeid] = f"{module}#{index // (2 * size)}"
    return keys


def make_scheduler(config, log, size: int):
    """pytest-xdist's scope scheduling with a batch chunk as the scope."""
    from xdist.scheduler import LoadScopeScheduling

    class BatchChunkScheduling(LoadScopeScheduling):
        _keys: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self._keys is None:
                self._keys = chunks(list(self.collection or []), size)
            return self._keys.get(nodeid, nodeid)

    return BatchChunkScheduling(config, log)


@dataclass
class Batch:
    name: str
    items: list
    streaming: bool
    # its cases are known failures (of one reason): a failure in the shared job is their verdict
    expects_failure: bool = False
    ran: bool = False


@dataclass
class Verdict:
    """What a batch left for one of its cases."""

    passed: bool  # passed in the batch: its turn needs nothing more
    batch: str  # the batch's name and size, e.g. "gbk#3 (8 cases in one job)"
    failed: BaseException | None = None  # a known failure's failure in the batch: its verdict
    alone: str | None = None  # why it runs alone in its own turn
    failed_in_batch: str | None = None  # how it failed in the batch (checked against its solo run)
    batch_failure: str | None = None  # the error of a batch job that failed as a whole
    share_s: float = 0.0  # its share of the batch's wall time

    def describe(self) -> str:
        if self.passed or self.failed is not None:
            return self.batch
        return f"ran alone: {self.alone}"


@dataclass
class _Member:
    item: object
    case_id: str
    pipeline: beam.Pipeline | None = None
    metrics: dict | None = None  # the shared job's metrics, handed to the resumed body
    shape: str | None = None  # the shape it asked to be submitted in (shapes.py); None: as built
    outcome: BaseException | None = None
    alone: str | None = None
    failed_jobs: list[str] = field(default_factory=list)  # shared jobs of it that failed as a whole
    job: str | None = None  # the shared job it was first run in
    finished: bool = False
    parked: threading.Event = field(default_factory=threading.Event)  # at runner.run, or finished
    resume: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)


class MemberRunner(CaseRunner):
    """The ``runner`` a case's body gets while it is built into a shared job."""

    shares_job = True

    def __init__(self, target, streaming: bool, member: _Member):
        super().__init__(target, streaming)
        self.member = member
        self._built = False

    def pipeline(self, *extra_args: str) -> beam.Pipeline:
        if not set(extra_args) <= sharing.CONSTRUCTION_ONLY_OPTIONS:
            raise sharing.RunsAlone(f"it sets pipeline options of its own ({' '.join(extra_args)})")
        if self._built:
            raise sharing.RunsAlone("it builds more than one pipeline")
        self._built = True
        pipeline = super().pipeline(*extra_args)
        checks.share_job(pipeline)
        return pipeline

    def shaped(self, shape: str) -> CaseRunner:
        """Shares a job with the cases that ask for the same shape (the SDK rewrites the whole job)."""
        self.member.shape = shapes.check_shape(shape)
        return self

    def run_expecting_failure(self, pipeline, match: str) -> str:
        raise sharing.RunsAlone("it expects its job to fail")

    def run(self, pipeline: beam.Pipeline, shape: str | None = None) -> RunResult:
        __tracebackhide__ = True
        member = self.member
        if shape is not None and shape != member.shape:
            if member.shape is not None:
                raise sharing.RunsAlone(f"it submits its pipeline in two shapes ({member.shape}, {shape})")
            member.shape = shapes.check_shape(shape)
        if member.pipeline is not None:
            raise sharing.RunsAlone("it runs more than one pipeline")
        reason = sharing.alone_reason(pipeline)
        if reason is not None:
            raise sharing.RunsAlone(reason)
        member.pipeline = pipeline
        member.parked.set()
        member.resume.wait()
        if member.metrics is None:
            raise sharing.RunsAlone(member.alone or "its batch did not run")
        self.judge_shared(pipeline, member.metrics)
        return cast(RunResult, _SharedRunResult())


class _SharedRunResult:
    """A shared job's result as one case sees it: DONE, and nothing else, since its metrics and
    transform names are its neighbours' too. A case that reads them runs alone."""

    state = "DONE"

    def __getattr__(self, name: str):
        raise sharing.RunsAlone("it reads the job's metrics, which a shared job mixes with its neighbours'")


class Batches:
    """The session's batches: the plan, running each batch when its first case's turn comes, and
    what each left for its cases (verdict)."""

    def __init__(self, size: int, case_timeout: float, target_of: Callable, case_id_of: Callable):
        self.size = size
        self.case_timeout = case_timeout
        self.target_of = target_of  # () -> the started target; raises when it cannot start
        self.case_id_of = case_id_of
        self.of: dict[str, Batch] = {}
        self.verdicts: dict[str, Verdict] = {}

    # ------------------------------------------------------------------ plan

    def plan(
        self, items: list, sharing_group: Callable[[object], str | None], streaming_of: Callable[[object], bool]
    ) -> None:
        """``sharing_group``: None for a case that never shares a job; else the group it may share
        one with ("" for cases expected to pass; a known failure's reason for its cases: one
        whose failure crashes its job then costs only the jobs of cases failing alike)."""
        keys = chunks([i.nodeid for i in items], self.size)
        groups: dict[tuple[str, bool, str], list] = {}
        for item in items:
            group = sharing_group(item)
            if group is not None and _takes_only_runner(item):
                groups.setdefault((keys[item.nodeid], streaming_of(item), group), []).append(item)
        numbered: dict[str, int] = {}  # batches per module, for their names
        for (chunk, streaming, group), members in groups.items():
            module = chunk.split("#")[0].rsplit("/", 1)[-1].removesuffix(".py").removeprefix("test_")
            for start in range(0, len(members), self.size):
                part = members[start : start + self.size]
                if len(part) < 2:
                    continue
                numbered[module] = numbered.get(module, 0) + 1
                batch = Batch(f"{module}#{numbered[module]}", part, streaming, expects_failure=bool(group))
                for item in part:
                    self.of[item.nodeid] = batch

    # ------------------------------------------------------------------ running

    def before(self, item) -> None:
        """At a case's turn, before pytest sets it up: run its batch if it is the batch's first."""
        batch = self.of.get(item.nodeid)
        if batch is None or batch.ran or batch.items[0] is not item:
            return
        batch.ran = True
        try:
            target = self.target_of()
            target.ensure_running()
        except Exception:
            return  # every case's own setup reports why the target is unavailable
        import time

        started = time.monotonic()
        members = [_Member(i, self.case_id_of(i)) for i in batch.items]
        for member in members:
            self._build(member, target, batch.streaming)
        shared = [m for m in members if m.pipeline is not None and not m.finished]
        by_shape: dict[str | None, list[_Member]] = {}
        for member in shared:
            by_shape.setdefault(member.shape or target.settings.pipeline_shape, []).append(member)
        try:
            for number, (shape, group) in enumerate(by_shape.items()):
                name = batch.name if len(by_shape) == 1 else f"{batch.name}.{number + 1}"
                described = f"{name} ({len(group)} cases in one job" + (f", shape {shape})" if shape else ")")
                for member in group:
                    member.job = described
                self._run(described, group, target, batch.streaming, shape)
        except Exception as e:  # the kit could not make the batch: every case runs alone
            for member in shared:
                if not member.done.is_set():
                    self._release(member, None, f"{batch.name} could not be run: {type(e).__name__}: {e}")
        share = (time.monotonic() - started) / max(1, len(members))
        for member in members:
            job = member.job or f"{batch.name} (planned)"
            self.verdicts[member.item.nodeid] = self._verdict_of(member, job, share, batch.expects_failure)

    def _build(self, member: _Member, target, streaming: bool) -> None:
        runner = MemberRunner(target, streaming, member)
        params = getattr(getattr(member.item, "callspec", None), "params", {})
        kwargs = {name: runner if name == "runner" else params[name] for name in _argnames(member.item)}

        def body() -> None:
            try:
                member.item.obj(**kwargs)
                runner.finish()
            except sharing.RunsAlone as e:
                member.alone = member.alone or str(e)
            except BaseException as e:  # the case's own failure (or skip): judged after the batch
                member.outcome = e
            finally:
                member.finished = True
                member.parked.set()
                member.done.set()

        threading.Thread(target=body, name=f"build {member.case_id}", daemon=True).start()
        if not member.parked.wait(BODY_TIMEOUT_S):
            member.alone = f"it did not build its pipeline within {BODY_TIMEOUT_S:g} s"
            member.pipeline = None
        elif member.pipeline is None and member.alone is None:
            member.alone = "it ran no pipeline through runner.run"

    def _run(self, name: str, members: list[_Member], target, streaming: bool, shape: str | None) -> None:
        """Run ``members`` as one job; when the job fails as a whole, each half again."""
        if len(members) < 2:
            for member in members:
                self._release(member, None, member.alone or "its batch could not share a job")
            return
        error = self._run_shared(members, target, streaming, shape)
        if error is None:
            return
        for member in members:
            member.failed_jobs.append(f"the job of {name} failed as a whole: {error}")
        if len(members) < 4 or error.startswith(_TIMED_OUT):
            # a job that hangs would hang its halves too, each for the whole time limit: alone,
            # every case waits only for its own
            for member in members:
                self._release(member, None, member.failed_jobs[-1])
            return
        half = len(members) // 2
        for part, suffix in ((members[:half], "a"), (members[half:], "b")):
            self._run(f"{name.split(' ')[0]}{suffix} ({len(part)} cases in one job)", part, target, streaming, shape)

    def _run_shared(self, members: list[_Member], target, streaming: bool, shape: str | None) -> str | None:
        """One job of every member's pipeline; hands each body the result. None, or why it failed."""
        batch_runner = CaseRunner(target, streaming)
        pipeline = batch_runner.pipeline()
        for member in members:
            assert member.pipeline is not None
            sharing.graft(pipeline, sharing.scope_label(member.case_id), member.pipeline)
        result = None
        try:
            with _deadline(self.case_timeout):
                result = target.run_shaped(pipeline, shape) if shape else pipeline.run()
                state = str(result.wait_until_finish())
                metrics = all_metrics(result)
        except _DeadlinePassed:
            _cancel_quietly(result)
            return f"{_TIMED_OUT} {self.case_timeout:g} s"
        except Exception as e:
            text = str(e).strip()
            return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"
        if "DONE" not in state:
            return f"it finished in state {state}"
        for member in members:
            self._release(member, metrics, None)
        return None

    def _release(self, member: _Member, metrics: dict | None, alone: str | None) -> None:
        """Resume a parked body, with the shared job's metrics or with why it must run alone, and
        wait until it has read its result."""
        member.metrics = metrics
        if alone is not None:
            member.alone = alone
        member.resume.set()
        if not member.done.wait(BODY_TIMEOUT_S):
            member.alone = member.alone or f"it did not read its result within {BODY_TIMEOUT_S:g} s"

    def _verdict_of(self, member: _Member, batch: str, share: float, expects_failure: bool) -> Verdict:
        failure = member.failed_jobs[0] if member.failed_jobs else None
        if member.alone is not None:
            return Verdict(False, batch, alone=member.alone, batch_failure=failure)
        if isinstance(member.outcome, pytest.skip.Exception):
            return Verdict(False, batch, alone="it skipped itself while built for a shared job")
        if member.outcome is None and expects_failure:
            # an unexpected pass is judged alone: a known failure leaves the file only on its solo verdict
            alone = "it passed in a shared job, though a known failure"
            return Verdict(False, batch, alone=alone, batch_failure=failure)
        if member.outcome is None:
            return Verdict(True, batch, share_s=share, batch_failure=failure)
        if expects_failure:
            return Verdict(False, batch, failed=member.outcome, share_s=share, batch_failure=failure)
        text = str(member.outcome)
        return Verdict(False, batch, alone="it failed in the shared job", failed_in_batch=text)

    # ------------------------------------------------------------------ verdicts

    def verdict(self, item) -> Verdict | None:
        return self.verdicts.get(item.nodeid)


def _argnames(item) -> list[str]:
    return list(inspect.signature(item.obj).parameters)


def _takes_only_runner(item) -> bool:
    """A case whose body takes nothing but ``runner`` and its own parameters, and runs one job
    (a property case runs one per example)."""
    function = getattr(item, "obj", None)
    if function is None or getattr(item, "cls", None) is not None or hasattr(function, "hypothesis"):
        return False
    params = getattr(getattr(item, "callspec", None), "params", {})
    try:
        names = _argnames(item)
    except (TypeError, ValueError):
        return False
    return "runner" in names and all(n == "runner" or n in params for n in names)


class _DeadlinePassed(BaseException):
    pass


@contextlib.contextmanager
def _deadline(seconds: float):
    """Raise _DeadlinePassed in this (the main) thread after ``seconds``, as pytest-timeout does for a
    case: the shared job is submitted and awaited on the thread a case's own job uses, so the
    runner's client (gRPC channels, a LOOPBACK worker pool) lives where it does for a case alone."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        yield  # no alarm off the main thread: the job runs without a limit of its own
        return

    def passed(signum, frame):
        raise _DeadlinePassed()

    previous = signal.signal(signal.SIGALRM, passed)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _cancel_quietly(result) -> None:
    try:
        if result is not None:
            result.cancel()
    except Exception:
        pass

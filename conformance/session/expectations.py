"""A runner's known failures, as data.

File format (YAML)::

    target: beam-fnapi                # informational
    include: other.yaml               # optional: also every entry of that file (path relative to this one)
    known_failures:
      - case: "triggers/after_count_*" # a case id or a glob over case ids
        reason: "why this runner fails it"
        issue: https://...            # optional
      - capability: triggers          # a capability id, or a whole group
        reason: "..."
        skip: true                    # optional: do not even run (e.g. the runner hangs)
      - case: "timers/some_case"
        reason: "fails only in some runs: ..."
        flaky: true                   # optional: a pass is accepted too (nondeterministic runner bug)
      - case: "lateness/*"
        reason: "the runner's TestStream lets later elements overtake a watermark advance"
        lies_in: TestStream event order   # optional: the failure lies in this property (a name of
                                          # capabilities.CROSS_CUTTING), not in the case's subject

A ``lies_in`` entry says where the failure lies when nothing in the runner's output can show it
(a TestStream whose events the runner does not apply in order fails a lateness case with output a
runner with wrong lateness could give too): the matrix then counts the failure under that
property's capability and leaves the case's own row not judged, as it does for a property the kit
detects itself (a refused TestStream, pane metadata).

Beam's Java ValidatesRunner tests (``--suite java-vr``, case ids ``java_vr/<Class>.<method>``) are
matched only by ``case`` entries whose id or glob starts with ``java_vr/``; the kit's cases only by
the other entries. A capability entry is about the kit's cases: a runner limitation found with a
Python pipeline says nothing certain of a Java test that Beam placed in the same row.

A known failure that fails is reported as an expected failure; one that passes is
an unexpected pass, which fails the run so the file stays true (unless it is marked
flaky: then a pass is reported as passed, with the entry's reason attached).
"""

from __future__ import annotations

import fnmatch
import os
from dataclasses import dataclass

import yaml

from conformance import capabilities

JAVA_VR_PREFIX = "java_vr/"


class ExpectationsError(ValueError):
    pass


@dataclass(frozen=True)
class KnownFailure:
    reason: str
    case: str | None = None
    capability: str | None = None
    issue: str | None = None
    skip: bool = False
    flaky: bool = False
    source: str = ""
    # the cross-cutting property the failure lies in (capabilities.CROSS_CUTTING), if the entry says
    lies_in: str | None = None

    def for_java_vr(self) -> bool:
        """Does this entry speak of Beam's Java ValidatesRunner tests (not of the kit's cases)?"""
        return self.case is not None and self.case.startswith(JAVA_VR_PREFIX)

    def matches(self, case_id: str, capability_id: str) -> bool:
        if case_id.startswith(JAVA_VR_PREFIX) != self.for_java_vr():
            return False
        if self.case is not None:
            # An exact id first: parametrized ids hold brackets, which a glob reads as a set.
            return case_id == self.case or fnmatch.fnmatchcase(case_id, self.case)
        return capability_id == self.capability or capability_id.startswith(self.capability + ".")

    def describe(self) -> str:
        text = self.reason
        if self.issue:
            text += f" ({self.issue})"
        return text


class Expectations:
    def __init__(self, entries: list[KnownFailure], path: str | None = None):
        self.entries = entries
        self.path = path
        self._used: set[int] = set()

    @classmethod
    def empty(cls) -> Expectations:
        return cls([])

    @classmethod
    def load(cls, path: str, _depth: int = 0) -> Expectations:
        try:
            with open(path) as f:
                data = yaml.safe_load(f) or {}
        except OSError as e:
            raise ExpectationsError(f"cannot read expectations file {path}: {e}") from None
        except yaml.YAMLError as e:
            raise ExpectationsError(f"expectations file {path} is not valid YAML: {e}") from None
        entries = parse(data, path)
        include = data.get("include") if isinstance(data, dict) else None
        if include:
            if _depth > 4:
                raise ExpectationsError(f"{path}: 'include' nests too deeply (a cycle?)")
            entries += cls.load(os.path.join(os.path.dirname(path), include), _depth + 1).entries
        return cls(entries, path)

    def lookup(self, case_id: str, capability_id: str) -> KnownFailure | None:
        """The first entry that covers the case (case entries win over capability entries)."""
        ordered = sorted(enumerate(self.entries), key=lambda ie: ie[1].case is None)
        for i, entry in ordered:
            if entry.matches(case_id, capability_id):
                self._used.add(i)
                return entry
        return None

    def unused(self) -> list[KnownFailure]:
        """Entries that matched no collected case: probably stale or misspelled."""
        return [e for i, e in enumerate(self.entries) if i not in self._used]


def parse(data, source: str = "<data>") -> list[KnownFailure]:
    if not isinstance(data, dict):
        raise ExpectationsError(f"{source}: top level must be a mapping with 'known_failures'")
    unknown_keys = set(data) - {"target", "description", "include", "known_failures"}
    if unknown_keys:
        raise ExpectationsError(f"{source}: unknown top-level keys {sorted(unknown_keys)}")
    raw = data.get("known_failures") or []
    if not isinstance(raw, list):
        raise ExpectationsError(f"{source}: 'known_failures' must be a list")
    entries = []
    for n, item in enumerate(raw, 1):
        where = f"{source}: known_failures entry {n}"
        if not isinstance(item, dict):
            raise ExpectationsError(f"{where} must be a mapping")
        extra = set(item) - {"case", "capability", "reason", "issue", "skip", "flaky", "lies_in"}
        if extra:
            raise ExpectationsError(f"{where}: unknown keys {sorted(extra)}")
        case, capability = item.get("case"), item.get("capability")
        if (case is None) == (capability is None):
            raise ExpectationsError(f"{where}: give exactly one of 'case' or 'capability'")
        reason = item.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise ExpectationsError(f"{where}: every known failure needs a 'reason'")
        if capability is not None and capability not in capabilities.BY_ID and capability not in capabilities.GROUPS:
            raise ExpectationsError(f"{where}: unknown capability {capability!r}")
        lies_in = item.get("lies_in")
        if lies_in is not None and lies_in not in capabilities.CROSS_CUTTING:
            known = ", ".join(sorted(capabilities.CROSS_CUTTING))
            raise ExpectationsError(f"{where}: 'lies_in' names no property the kit knows ({lies_in!r}); known: {known}")
        entries.append(
            KnownFailure(
                reason.strip(),
                case,
                capability,
                item.get("issue"),
                bool(item.get("skip", False)),
                bool(item.get("flaky", False)),
                source,
                lies_in,
            )
        )
    return entries

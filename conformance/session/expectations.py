"""A runner's known failures, as data.

File format (YAML)::

    target: beam-fnapi                # informational
    runner_version: "Beam 2.62.0, ..." # optional: the runner's release the file was written for, as
                                      # the target reports it (results' target_info.runner_version)
    include: other.yaml               # optional: also every entry of that file (path relative to this one)
    known_failures:
      - property: panes.metadata      # a cross-cutting property (capabilities.CROSS_CUTTING), by its
        reason: "..."                 # name or by the capability it is counted under: every case
                                      # that fails with its every deviation in it (see below)
      - case: "triggers/after_count_*" # a case id or a glob over case ids
        reason: "why this runner fails it"
        issue: https://...            # optional
      - capability: triggers          # a capability id, or a whole group
        reason: "..."
        skip: true                    # optional: do not even run (e.g. the runner hangs)
      - case: "timers/some_case"
        reason: "fails only in some runs: ..."
        flaky: true                   # optional: a pass is accepted too (nondeterministic runner bug)
      - signature: "pane timing @ GroupByKey+TestStream+WindowInto"   # a generated pipeline's
        reason: "..."                 # deviation (-m generated), by its signature or a glob over them
      - case: "lateness/*"
        reason: "the runner's TestStream lets later elements overtake a watermark advance"
        lies_in: TestStream event order   # optional: the failure lies in this property (a name of
                                          # capabilities.CROSS_CUTTING), not in the case's subject

A ``property`` entry covers, after a case ran, a failure the kit found to lie wholly in that
property (the case's failure names it: ``cross_cutting`` in the results), when no case or capability
entry covers the case: one entry says "this runner deviates only in pane metadata" for every case
that shows it, and which cases those are follows from the kit's own verdicts, not from a list. A
case it would cover that passes is simply passed (no unexpected pass: the entry names no case).
It cannot skip a case, be flaky or say ``lies_in``; it can name only a property the kit detects
(``CrossCutting.detected``), since no failure names the others.

A ``case`` entry must match a case the suite defines: one that matches none fails the load,
naming its file and entry, once the case modules it could name were collected (whatever
``-k``/``-m`` then select).

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

import difflib
import fnmatch
import os
from collections.abc import Iterable
from dataclasses import dataclass

import yaml

from conformance import capabilities

JAVA_VR_PREFIX = "java_vr/"
# how a file named on the command line was chosen (Expectations.how; any other way is by the target's name)
NAMED_BY_OPTION = "named by --expectations"
# how a case a ``skip`` entry keeps from running is reported (its results record's message starts so)
NOT_RUN = "known failure, not run: "
_TOP_LEVEL = {"target", "description", "runner_version", "include", "known_failures"}
_ENTRY_KEYS = {"case", "capability", "property", "signature", "reason", "issue", "skip", "flaky", "lies_in"}
# what a property entry cannot say: it decides after a run, on a failure, and names no case
_NOT_FOR_PROPERTY = ("skip", "flaky", "lies_in")


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
    # a property entry: the cross-cutting property whose failures it covers (its CROSS_CUTTING name)
    property_name: str | None = None
    # its place in its file's known_failures (from 1), for messages that name it
    number: int = 0
    # a signature entry: the generated pipelines' deviation it covers (a signature or a glob over them)
    signature: str | None = None

    def for_java_vr(self) -> bool:
        """Does this entry speak of Beam's Java ValidatesRunner tests (not of the kit's cases)?"""
        return self.case is not None and self.case.startswith(JAVA_VR_PREFIX)

    def matches(self, case_id: str, capability_id: str) -> bool:
        """Does it cover this case before it runs? (A property entry decides after, on its failure.)"""
        if (
            self.property_name is not None
            or self.signature is not None
            or case_id.startswith(JAVA_VR_PREFIX) != self.for_java_vr()
        ):
            return False
        if self.case is not None:
            return self.matches_id(case_id)
        return capability_id == self.capability or capability_id.startswith(self.capability + ".")

    def matches_id(self, case_id: str) -> bool:
        # An exact id first: parametrized ids hold brackets, which a glob reads as a set.
        return self.case is not None and (case_id == self.case or fnmatch.fnmatchcase(case_id, self.case))

    def describe(self) -> str:
        text = self.reason
        if self.issue:
            text += f" ({self.issue})"
        return text

    def label(self) -> str:
        """What it names: ``case 'gbk/x'``, ``capability state``, ``property pane metadata``."""
        if self.case is not None:
            return f"case {self.case!r}"
        if self.capability is not None:
            return f"capability {self.capability}"
        if self.signature is not None:
            return f"signature {self.signature!r}"
        return f"property {self.property_name}"

    def where(self) -> str:
        return f"{self.source}: known_failures entry {self.number} ({self.label()})"


@dataclass(frozen=True)
class Judgement:
    """The verdict on a case that ran: passed, failed, expected-failure or unexpected-pass, and the
    entry that decided it (a flaky entry's pass is passed, with its entry)."""

    outcome: str
    entry: KnownFailure | None


class Expectations:
    def __init__(
        self,
        entries: list[KnownFailure],
        path: str | None = None,
        runner_version: str | None = None,
        how: str = "",
    ):
        self.entries = entries
        # how the file was chosen, for the run's header ("named by --expectations", ...)
        self.how = how
        self.path = path
        # the runner's release the file says it was written for (None: it does not say)
        self.runner_version = runner_version

    @property
    def chosen_by_name(self) -> bool:
        """Picked as conformance/expectations/<target-name>.yaml (``how`` says where), not named by
        --expectations (nor made without saying how)."""
        return self.path is not None and self.how not in ("", NAMED_BY_OPTION)

    @classmethod
    def empty(cls, why: str = "none") -> Expectations:
        """No known failures; ``why`` says so in the run's header."""
        return cls([], how=why)

    @classmethod
    def load(cls, path: str, _depth: int = 0, how: str = "") -> Expectations:
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
        version = data.get("runner_version")
        if version is not None and not isinstance(version, str):
            raise ExpectationsError(f"{path}: 'runner_version' must be a string, not {version!r}")
        return cls(entries, path, version, how)

    def lookup(self, case_id: str, capability_id: str) -> KnownFailure | None:
        """The first entry that covers the case (case entries win over capability entries)."""
        ordered = sorted(self.entries, key=lambda entry: entry.case is None)
        return next((entry for entry in ordered if entry.matches(case_id, capability_id)), None)

    def for_property(self, prop: str) -> KnownFailure | None:
        """The property entry covering a failure whose every deviation lies in ``prop``."""
        return next((entry for entry in self.entries if entry.property_name == prop), None)

    def for_signature(self, signature: str) -> KnownFailure | None:
        """The signature entry covering a generated pipeline's deviation of that signature."""
        return next(
            (e for e in self.entries if e.signature is not None and fnmatch.fnmatchcase(signature, e.signature)), None
        )

    def judge(
        self, known: KnownFailure | None, failed: bool, cross_cutting: str | None, signature: str | None = None
    ) -> Judgement:
        """The verdict on a case that ran, given the entry ``lookup`` found for it before (None:
        none), the property its failure lies in wholly, if any, and a generated pipeline's
        deviation signature, if any."""
        if known is None and failed and cross_cutting is not None:
            known = self.for_property(cross_cutting)
        if known is None and failed and signature is not None:
            known = self.for_signature(signature)
        if known is None:
            return Judgement("failed" if failed else "passed", None)
        if failed:
            return Judgement("expected-failure", known)
        return Judgement("passed" if known.flaky else "unexpected-pass", known)

    def stale(self, records: list[dict], java: bool) -> list[KnownFailure]:
        """The entries of this suite (Java entries name java_vr/ ids) that decided none of a run's
        results records: a property entry none of whose failures showed up, any other that
        matched no case that ran."""
        own = [e for e in self.entries if e.for_java_vr() == java]
        return [e for e in own if not any(_decides(e, r) for r in records)]

    def check_defined(self, case_ids: Iterable[str], case_modules: Iterable[str]) -> None:
        """Refuse the case entries that match no case the suite defines. ``case_ids``: every case
        collected, before -k/-m chose; ``case_modules``: the names of the packaged case modules
        (``gbk`` for test_gbk.py), collected or not. An entry whose ids could lie in a packaged
        module that was not collected this time is left alone: the run cannot tell."""
        ids = list(case_ids)
        collected = {i.split("/", 1)[0] for i in ids if not i.startswith(JAVA_VR_PREFIX)}
        known_modules = collected | set(case_modules)
        java_collected = any(i.startswith(JAVA_VR_PREFIX) for i in ids)
        unmatched = []
        for entry in self.entries:
            if entry.case is None:
                continue
            if entry.for_java_vr():
                if not java_collected:
                    continue
            else:
                module = entry.case.split("/", 1)[0]
                named = {m for m in known_modules if m == module or fnmatch.fnmatchcase(m, module)}
                if named - collected:
                    continue
            if not any(entry.matches_id(i) for i in ids):
                unmatched.append(entry)
        if unmatched:
            raise ExpectationsError(
                f"{len(unmatched)} expectations entr{'y matches' if len(unmatched) == 1 else 'ies match'} "
                "no case the suite defines (a misspelled or removed case id):\n  "
                + "\n  ".join(e.where() for e in unmatched)
            )

    def version_warning(self, reported: str | None) -> str | None:
        """A warning when this file was chosen by the target's name and was written for another
        runner release than the one the target reports (or the target reports none)."""
        if not self.chosen_by_name or self.runner_version is None or reported == self.runner_version:
            return None
        runner = f"the runner reports {reported!r}" if reported else "the runner reports no version"
        return (
            f"expectations {self.path}, chosen by the target name, were written for runner version "
            f"{self.runner_version!r}; {runner}: their verdicts may not hold for it "
            "(name the file with --expectations to choose it deliberately, "
            "or write one with `beam-conformance baseline`)"
        )


def detected_property(record: dict) -> str | None:
    """The cross-cutting property a results record's failure lies in wholly, when the kit saw it
    there (``cross_cutting``); None for a pass, and for a property only an entry's ``lies_in`` names."""
    prop = record.get("cross_cutting")
    if record.get("outcome") not in ("failed", "expected-failure", "error") or prop not in capabilities.CROSS_CUTTING:
        return None
    return prop if capabilities.CROSS_CUTTING[prop].detected else None


def _decides(entry: KnownFailure, record: dict) -> bool:
    if entry.property_name is not None:
        return record.get("cross_cutting") == entry.property_name and record.get("known_failure") == entry.describe()
    if entry.signature is not None:
        return fnmatch.fnmatchcase(record.get("signature") or "", entry.signature)
    return entry.matches(record["id"], record["capability"])


def parse(data, source: str = "<data>") -> list[KnownFailure]:
    if not isinstance(data, dict):
        raise ExpectationsError(f"{source}: top level must be a mapping with 'known_failures'")
    unknown_keys = set(data) - _TOP_LEVEL
    if unknown_keys:
        raise ExpectationsError(f"{source}: {_unknown_keys(unknown_keys, _TOP_LEVEL)}")
    raw = data.get("known_failures") or []
    if not isinstance(raw, list):
        raise ExpectationsError(f"{source}: 'known_failures' must be a list")
    entries = []
    properties_seen: dict[str, int] = {}
    for n, item in enumerate(raw, 1):
        where = f"{source}: known_failures entry {n}"
        if not isinstance(item, dict):
            raise ExpectationsError(f"{where} must be a mapping")
        extra = set(item) - _ENTRY_KEYS
        if extra:
            raise ExpectationsError(f"{where}: {_unknown_keys(extra, _ENTRY_KEYS)}")
        case, capability, prop = item.get("case"), item.get("capability"), item.get("property")
        signature = item.get("signature")
        if sum(x is not None for x in (case, capability, prop, signature)) != 1:
            raise ExpectationsError(
                f"{where}: give exactly one of 'case' or 'capability', or a 'property', or a 'signature'"
            )
        if signature is not None and (not isinstance(signature, str) or any(item.get(k) for k in _NOT_FOR_PROPERTY)):
            raise ExpectationsError(
                f"{where}: a 'signature' is a deviation's signature (a string) and cannot {'/'.join(_NOT_FOR_PROPERTY)}"
            )
        reason = item.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise ExpectationsError(f"{where}: every known failure needs a 'reason'")
        if capability is not None and capability not in capabilities.BY_ID and capability not in capabilities.GROUPS:
            raise ExpectationsError(f"{where}: unknown capability {capability!r}")
        property_name = None if prop is None else _property_of(prop, item, where)
        if property_name is not None:
            if property_name in properties_seen:
                raise ExpectationsError(
                    f"{where}: property {property_name!r} has an entry already (entry {properties_seen[property_name]})"
                )
            properties_seen[property_name] = n
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
                property_name,
                n,
                signature,
            )
        )
    return entries


def _unknown_keys(unknown: set, allowed: set[str]) -> str:
    """Names the unknown keys, a close allowed one for each where there is one, and every allowed key."""
    named = []
    for key in sorted(map(str, unknown)):
        close = difflib.get_close_matches(key, allowed, n=1)
        named.append(f"{key!r} (did you mean {close[0]!r}?)" if close else repr(key))
    return f"unknown key{'s' if len(named) > 1 else ''} {', '.join(named)}; allowed keys: {', '.join(sorted(allowed))}"


def _property_of(prop, item: dict, where: str) -> str:
    """The CROSS_CUTTING name a property entry names, refused when the entry cannot work."""
    try:
        found = capabilities.cross_cutting_named(str(prop))
    except KeyError as e:
        raise ExpectationsError(f"{where}: {e.args[0]}") from None
    if not found.detected:
        raise ExpectationsError(
            f"{where}: the kit cannot see a deviation in {found.name!r} from a runner's output, so no failure "
            "names it: list its cases as 'case' entries with 'lies_in' instead"
        )
    said = [k for k in _NOT_FOR_PROPERTY if k in item]
    if said:
        raise ExpectationsError(
            f"{where}: a property entry covers failures after they happen and names no case: it takes no {said}"
        )
    return found.name

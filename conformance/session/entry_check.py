"""Refuse, before any case runs, an expectations entry that names no case the suite defines.

Checked on every case collected, before -k, -m, --sdks or --per-capability leave any out
(Expectations.check_defined says which entries a run can judge). Without pytest-xdist the
refusal is a usage error. Under pytest-xdist the workers collect, and an error raised there
reaches the user as an internal error of xdist's without its text: each worker leaves every
case out instead and hands the refusal to the controller, which prints it and ends the run as
a usage error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import pytest

from conformance.session.expectations import Expectations, ExpectationsError

_OUTPUT_KEY = "beam_conformance_undefined_entries"


class EntryCheck:
    def __init__(
        self,
        expectations: Expectations,
        case_ids: Callable[[list], list[str]],
        case_modules: Callable[[], Iterable[str]],
    ):
        self.expectations = expectations
        self.case_ids = case_ids  # the case ids of the collected items that are cases
        self.case_modules = case_modules  # the packaged case modules' names (gbk for test_gbk.py)
        self.refusal: str | None = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session, config, items):
        if any("::" in arg for arg in config.args):
            return  # cases named by node id: the rest of their modules was not collected
        try:
            self.expectations.check_defined(self.case_ids(items), self.case_modules())
        except ExpectationsError as e:
            if not hasattr(config, "workerinput"):
                raise pytest.UsageError(str(e)) from None
            self.refusal = str(e)
            config.hook.pytest_deselected(items=list(items))
            items[:] = []

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        self.refusal = self.refusal or getattr(node, "workeroutput", {}).get(_OUTPUT_KEY)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session):
        if self.refusal is None:
            return
        if hasattr(session.config, "workerinput"):
            session.config.workeroutput[_OUTPUT_KEY] = self.refusal
            return
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"ERROR: {self.refusal}", red=True)
        session.exitstatus = pytest.ExitCode.USAGE_ERROR

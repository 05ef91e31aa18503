"""Which columns run the kit's own runners: the reference runner and its Spark backend, in process
or behind our job server. The suite was written alongside them, so a full pass there is expected and
shows that the cases agree with the runners they grew up with, not that the cases are right."""

from __future__ import annotations

import os
import shlex

# The target kinds of conformance/session/targets/reference.py and spark.py (named here, not
# imported: the report does not load the runners or Beam).
OWN_KINDS = ("reference", "spark")
# Our job server as a --job-server-cmd starts it: the module, or the script pyproject.toml installs.
OWN_JOB_SERVER_MODULE = "reference_runner.jobserver"
OWN_JOB_SERVER_SCRIPT = "reference-runner"


def is_own(info: dict) -> bool:
    """Whether a target's description (a results document's target_info) names one of our runners."""
    if str(info.get("spec", "")).partition(":")[0] in OWN_KINDS:
        return True
    try:
        words = shlex.split(str(info.get("job_server_cmd", "")))
    except ValueError:  # an unbalanced quote: not a command we wrote
        return False
    return any(w == OWN_JOB_SERVER_MODULE or os.path.basename(w) == OWN_JOB_SERVER_SCRIPT for w in words)

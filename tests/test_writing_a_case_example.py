"""docs/writing-a-case.md's in-process target runs as the page shows it: its `conftest.py` block,
written to an empty folder, and its `pytest` command, run from there, pass two of the kit's cases
on the target the block registers. A change to the Target API that the page does not follow fails
here, not in a runner author's first try."""

import os
import shlex
import subprocess
import sys
from pathlib import Path

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "writing-a-case.md"


def _blocks(section: str) -> dict[str, str]:
    """The first fenced block of each language in the guide's section of that heading."""
    text = GUIDE.read_text()
    heading = f"\n### {section}\n"
    assert heading in text, f"docs/writing-a-case.md has no section {section!r}"
    body = text.split(heading, 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
    blocks: dict[str, str] = {}
    for chunk in body.split("```")[1::2]:
        language, _, code = chunk.partition("\n")
        blocks.setdefault(language.strip(), code)
    return blocks


def test_the_in_process_target_example_runs_two_cases(tmp_path):
    blocks = _blocks("An in-process target")
    assert "register(" in blocks["python"] and "class " in blocks["python"], blocks["python"]
    (tmp_path / "conftest.py").write_text(blocks["python"])
    commands = [shlex.split(line) for line in blocks["sh"].splitlines() if line.strip()]
    assert len(commands) == 1 and commands[0][:3] == ["pytest", "--pyargs", "conformance"], commands
    command = [sys.executable, "-m", *commands[0], "-p", "no:cacheprovider"]
    # this session's own pytest settings (an xdist worker's, PYTEST_ADDOPTS) are not the reader's
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert "target my-runner: 2 passed" in done.stdout, output[-4000:]
    assert not (tmp_path / "reports").exists(), "--no-results wrote results"

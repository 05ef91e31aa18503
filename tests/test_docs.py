"""The documentation agrees with the repository: every "SEMANTICS N" cite names a section of
conformance/SEMANTICS.md and every case cites one, the README keeps the two commands CI runs,
installs the kit in a way that works, and every guide is linked."""

import ast
import re
import shlex
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEMANTICS = ROOT / "conformance" / "SEMANTICS.md"
SCANNED = ["conformance", "reference_runner", "tests", "docs", "benchmarks", "examples", "trials", "fixtures"]
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".ini", ".sh"}
# "SEMANTICS 4", "SEMANTICS 5/7", "SEMANTICS 3 and 6", "SEMANTICS.md, sections 4, 5 and 8"
CITE = re.compile(r"SEMANTICS(?:\.md)?,?\s*(?:sections?\s*)?(\d+(?:\s*(?:,|/|and)\s*\d+)*)")


def _files():
    yield ROOT / "README.md"
    for top in SCANNED:
        for path in sorted((ROOT / top).rglob("*")):
            if path.suffix in SUFFIXES and path.is_file() and "node_modules" not in path.parts:
                yield path


def _sections() -> set[int]:
    return {int(n) for n in re.findall(r"^## (\d+) ", SEMANTICS.read_text(), re.MULTILINE)}


def test_semantics_has_the_ten_sections_the_cases_cite():
    # numbered 1 to 10 without a gap: a cite, once written, keeps pointing at its section
    assert _sections() == set(range(1, 11))


def test_every_semantics_cite_names_a_section_that_exists():
    sections = _sections()
    cites, wrong = 0, []
    for path in _files():
        text = path.read_text(errors="replace")
        for match in CITE.finditer(text):
            cites += 1
            for number in re.findall(r"\d+", match.group(1)):
                if int(number) not in sections:
                    line = text.count("\n", 0, match.start()) + 1
                    wrong.append(f"{path.relative_to(ROOT)}:{line}: {match.group(0)!r}")
    assert cites > 100  # the cases cite it throughout; a broken pattern would find none
    assert not wrong, "cites of sections conformance/SEMANTICS.md does not have:\n" + "\n".join(wrong)


CASES = ROOT / "conformance" / "cases"
# case definitions whose expectation is not the kit's to state: each Beam Java ValidatesRunner test
# asserts its own, and the module says where each one counts
NOT_THE_KITS_EXPECTATION = {"test_java_vr.py::test_java_vr"}


def _case_definitions():
    """Every test function of the kit's case modules, with its source (decorators, docstring,
    comments and body): what a reader of the case sees next to its expectation."""
    for path in sorted(CASES.glob("test_*.py")):
        text = path.read_text()
        lines = text.splitlines()
        for node in ast.parse(text).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                start = min([d.lineno for d in node.decorator_list] + [node.lineno])
                yield f"{path.name}::{node.name}", "\n".join(lines[start - 1 : node.end_lineno])


def test_every_case_cites_the_section_its_expectation_rests_on():
    # a module docstring's cite says where the area's expectations come from, not which section
    # one case's output rests on: each case cites its own, in a comment or its docstring
    sections = _sections()
    definitions = dict(_case_definitions())
    assert len(definitions) > 400  # a broken walk would find none and pass
    uncited, wrong = [], []
    for name, source in definitions.items():
        if name in NOT_THE_KITS_EXPECTATION:
            continue
        numbers = [int(n) for m in CITE.finditer(source) for n in re.findall(r"\d+", m.group(1))]
        if not numbers:
            uncited.append(name)
        wrong += [f"{name}: SEMANTICS {n}" for n in numbers if n not in sections]
    assert not uncited, f"{len(uncited)} cases cite no section of conformance/SEMANTICS.md:\n" + "\n".join(uncited)
    assert not wrong, "\n".join(wrong)
    assert NOT_THE_KITS_EXPECTATION <= definitions.keys(), "an exemption names a case that is gone"


def test_cites_of_the_file_name_it_by_its_place_in_the_repository():
    vague = []
    for path in _files():
        if path == Path(__file__).resolve():  # its own patterns and examples
            continue
        text = path.read_text(errors="replace")
        for match in re.finditer(r"[\w./]*SEMANTICS\.md", text):
            if not text[text.rfind("\n", 0, match.start()) + 1 : match.start()].strip():
                continue  # an entry of a layout tree, under its directory
            if not match.group(0).endswith("conformance/SEMANTICS.md"):
                vague.append(f"{path.relative_to(ROOT)}: {match.group(0)}")
    assert not vague, "\n".join(vague)


README = ROOT / "README.md"
GUIDES = sorted((ROOT / "docs").glob("*.md"))


def test_readme_keeps_the_two_commands_and_ci_runs_its_test_command():
    text = README.read_text()
    assert "tox -e conformance   # run the suite against the default targets" in text
    assert "tox -e tests         # the kit's own tests" in text
    ci = (ROOT / ".ci" / "run").read_text()
    assert [line for line in ci.splitlines() if line.strip() == "tox -e tests"], ".ci/run must run `tox -e tests`"


def test_readme_links_every_guide():
    text = README.read_text()
    missing = [g.name for g in GUIDES if f"](docs/{g.name})" not in text]
    assert not missing, f"guides the README's map does not link: {missing}"


def _headings(path: Path) -> set[str]:
    """GitHub's anchors of a Markdown file's headings (code blocks skipped)."""
    anchors, fenced = set(), False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#{1,6} (.*)", line)):
            anchors.add(re.sub(r"[^\w\- ]", "", m.group(1).strip().lower()).replace(" ", "-"))
    return anchors


def test_links_between_the_docs_resolve():
    broken = []
    for page in [README, SEMANTICS, *GUIDES]:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in _headings(dest):
                broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


# where the README's install commands name the clone (tests/test_wheel.py runs them on this checkout)
CHECKOUT = "/path/to/this/checkout"


def install_commands() -> list[list[str]]:
    """The README's commands that install the kit ("Installing the kit"), each split as a shell does."""
    text = README.read_text()
    assert "\n## Installing the kit\n" in text, "the README says nowhere how to install the kit"
    section = text.split("\n## Installing the kit\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh\n", 1)[1].split("```", 1)[0]
    return [words for line in block.splitlines() if (words := shlex.split(line, comments=True))]


def test_the_kit_is_installed_from_its_clone_or_a_wheel_built_from_it():
    # `pip install beam-runner-conformance` opened the README and the guide, and no index serves
    # that name ("No matching distribution"): the kit installs from a clone, or from a wheel of one
    commands = install_commands()
    assert [c[:2] for c in commands] == [["pip", "install"]] * 2 + [["pip", "wheel"], ["pip", "install"]], commands
    clone, with_spark, wheel, from_wheel = commands
    assert clone[-1] == CHECKOUT and wheel[-1] == CHECKOUT
    # the Spark backend is an extra: the same clone, with it
    assert with_spark[-1] == f"{CHECKOUT}[spark]"
    assert wheel[wheel.index("-w") + 1] == "dist" and from_wheel[-1].startswith("dist/beam_runner_conformance-")
    # and no page installs it by a distribution name that no index serves
    by_name = re.compile(r"pip install (?:-\S+ )*['\"]?beam[-_]runner[-_]conformance(?![-\w.]*\.whl)")
    pages = [README, *GUIDES]
    named = [f"{page.relative_to(ROOT)}: {m.group(0)}" for page in pages for m in by_name.finditer(page.read_text())]
    assert not named, named


def _plugin_options() -> list[str]:
    """Every option the pytest plugin adds, by its long name."""
    from conformance.session import plugin

    names: list[str] = []

    class Group:
        def addoption(self, *flags, **kwargs):
            names.append(next(f for f in flags if f.startswith("--")))

    class Parser:
        def getgroup(self, *args, **kwargs):
            return Group()

    plugin.pytest_addoption(Parser())
    return names


def test_the_options_table_lists_every_option_of_the_plugin():
    page = (ROOT / "docs" / "testing-your-runner.md").read_text()
    table = page.split("\n### Options\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    documented = {flag for row in rows for flag in re.findall(r"`(--[a-z0-9-]+)", row.split(" | ", 1)[0])}
    missing = [name for name in _plugin_options() if name not in documented]
    assert not missing, f"options missing from docs/testing-your-runner.md's table: {missing}"

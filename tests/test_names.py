"""One name per thing in the reference runner (docs/reference-runner.md, "Stage types"): no two
classes share a name and no two modules share a file name, so a name in a trace, a traceback or a
review says which one is meant."""

import ast
import collections
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent / "reference_runner"
SOURCES = [p for p in ROOT.rglob("*.py") if not p.name.endswith("_test.py")]


def test_no_two_classes_share_a_name():
    where = collections.defaultdict(list)
    for path in SOURCES:
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                where[node.name].append(str(path.relative_to(ROOT)))
    assert {name: paths for name, paths in where.items() if len(paths) > 1} == {}


def test_no_two_modules_share_a_file_name():
    where = collections.defaultdict(list)
    for path in SOURCES:
        if path.name not in ("__init__.py", "__main__.py"):
            where[path.name].append(str(path.relative_to(ROOT)))
    assert {name: paths for name, paths in where.items() if len(paths) > 1} == {}

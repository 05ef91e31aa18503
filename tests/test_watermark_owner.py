"""Watermark rules have one owner, the engine (reference_runner/engine): a backend drives the
engine's stage objects and the rules of engine/watermarks.py, and computes no watermark itself.
Here: no ``max``/``min`` over a watermark outside the engine."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent / "reference_runner"
WATERMARKISH = ("watermark", "upstream", "PLUS_INFINITY", "MIN_TIMESTAMP")


def _watermark_arithmetic(path: pathlib.Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("max", "min"):
            text = ast.unparse(node)
            if any(word in text for word in WATERMARKISH):
                yield f"{path.relative_to(ROOT.parent)}:{node.lineno}: {text}"


def test_watermark_arithmetic_lives_only_in_the_engine():
    found = [
        line
        for path in sorted(ROOT.rglob("*.py"))
        if path.relative_to(ROOT).parts[0] != "engine"
        for line in _watermark_arithmetic(path)
    ]
    assert not found, "watermarks computed outside reference_runner/engine:\n" + "\n".join(found)

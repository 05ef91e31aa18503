"""The reference runner's layers (docs/reference-runner.md, "Layout"): each module imports only
from its own package or from layers below it, never upward, so no import cycle can form between
packages; and the engine imports neither protos nor gRPC."""

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent / "reference_runner"

# Lower numbers first. runtime/ runs a Plan's stages for both backends (bundles, keyed heads,
# side inputs, the engine's stage specs): below them both. SparkRunner (spark/spark_runner.py) is a
# runner, above the backend it wraps.
LAYERS = {
    "engine": 0,
    "beam_import": 0,
    "option_table": 1,
    "knobs": 1,
    "metrics": 1,
    "bundling": 2,
    "graph": 3,
    "worker": 4,
    "runtime": 5,
    "backends": 6,
    "executor": 7,
    "spark": 7,
    "lifecycle": 8,
    "in_process": 9,
    "runner": 10,
    "spark.spark_runner": 10,
    "jobserver": 11,
}


def _layer(module: str) -> int | None:
    parts = module.split(".")[1:]  # without "reference_runner"
    if not parts:
        return None  # the package itself re-exports ReferenceRunner
    return LAYERS.get(".".join(parts[:2]), LAYERS.get(parts[0]))


def _imports(path: pathlib.Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.module
            yield from (f"{node.module}.{a.name}" for a in node.names)


def _modules():
    for path in ROOT.rglob("*.py"):
        if path.name.endswith("_test.py"):
            continue
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def test_nothing_imports_upward():
    upward = []
    for module, path in _modules():
        mine = _layer(module)
        for target in _imports(path):
            theirs = _layer(target) if target.startswith("reference_runner.") else None
            if mine is None or theirs is None or module.split(".")[1] == target.split(".")[1] and theirs == mine:
                continue
            if theirs > mine and not (module == "reference_runner.spark" and target.startswith(module)):
                upward.append(f"{module} -> {target}")
    assert not upward, "imports against the layers:\n" + "\n".join(sorted(set(upward)))


def test_every_module_has_a_layer():
    assert [m for m, _ in _modules() if m != "reference_runner" and _layer(m) is None] == []


def test_the_engine_imports_no_protos_or_grpc():
    found = [
        f"{module} -> {target}"
        for module, path in _modules()
        if module.startswith("reference_runner.engine")
        for target in _imports(path)
        if "portability" in target
        or target.split(".")[0] in ("grpc", "google")
        or (target.startswith("reference_runner.") and not target.startswith("reference_runner.engine"))
    ]
    assert found == []

"""Merge the records of a partial run (cases selected with -k, say the cases a suite gained since
the last full run) into a committed results file, so that it covers the whole suite again without
running every case anew.

The merged document keeps the base run's description (target, versions, host, expectations,
started, finished, wall time, selection): it was the run of every case it held then. The summary is
counted again from the merged records. Each merged run is listed under ``merged_runs``, in order,
with its own started, finished, wall time, host, expectations, selection and the ids of the cases
it gave (``added``) or replaced (``replaced``): a case named there has the verdict of that run, any
other case the base run's. Nothing else of the document changes.

Runs are merged only if they are runs of the same target and suite with the same versions (the
SDK, Python, the runner's reported version), so that a file never mixes verdicts of two releases;
a case already in the base is refused unless ``replace`` is asked for.
"""

from __future__ import annotations

from conformance.session import results

# What must agree between the base run and a merged one: the target's versions and kind.
SAME_TARGET = ("spec", "apache_beam", "python", "runner_version", "version_skew")


class MergeError(ValueError):
    pass


def merge(base: dict, partial: dict, replace: bool = False) -> dict:
    """``base`` with ``partial``'s records added (or, with ``replace``, put in place of base's);
    a new document, neither argument is changed."""
    if results.run_key(base) != results.run_key(partial):
        raise MergeError(f"runs of different targets: {results.run_key(base)} and {results.run_key(partial)}")
    base_info, partial_info = base.get("target_info", {}), partial.get("target_info", {})
    differing = [k for k in SAME_TARGET if base_info.get(k) != partial_info.get(k)]
    if differing:
        raise MergeError(
            "the runs' targets differ in "
            + ", ".join(f"{k} ({base_info.get(k)!r} and {partial_info.get(k)!r})" for k in differing)
        )
    if (base.get("expectations") or None) != (partial.get("expectations") or None):
        raise MergeError(
            f"the runs were judged by different expectations files: {base.get('expectations')!r} "
            f"and {partial.get('expectations')!r}"
        )
    records = {r["id"]: r for r in base["cases"]}
    given = [r["id"] for r in partial["cases"]]
    if len(set(given)) != len(given):
        raise MergeError("the partial run holds a case twice")
    again = sorted(set(given) & set(records))
    if again and not replace:
        raise MergeError(
            f"{len(again)} case(s) of the partial run are in the base already (replace them with --replace): "
            + ", ".join(again[:10])
        )
    if not given:
        raise MergeError("the partial run holds no case")
    for record in partial["cases"]:
        records[record["id"]] = record
    merged = dict(base)
    merged["cases"] = sorted(records.values(), key=lambda r: r["id"])
    merged["summary"] = results.summarize(merged["cases"])
    merged["merged_runs"] = list(base.get("merged_runs", [])) + [
        {
            "started": partial.get("started"),
            "finished": partial.get("finished"),
            "wall_time_s": partial.get("wall_time_s"),
            "host": partial.get("host"),
            "expectations": partial.get("expectations"),
            "selection": partial.get("selection"),
            "added": sorted(set(given) - set(again)),
            "replaced": again,
        }
    ]
    return merged


def merge_files(base_path: str, partial_paths: list[str], out_path: str | None = None, replace: bool = False) -> dict:
    """Merge each partial results file into the one at ``base_path``, in order, and write the
    result to ``out_path`` (default: ``base_path`` itself). Returns the merged document."""
    document = results.load(base_path)
    for path in partial_paths:
        try:
            document = merge(document, results.load(path), replace=replace)
        except MergeError as e:
            raise MergeError(f"{path}: {e}") from None
    results.dump(document, out_path or base_path)
    return document

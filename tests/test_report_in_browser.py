"""The HTML matrix as a person reads it, in a real headless Chromium (Debian's package, driven by
Playwright): the grid, a cell's cases, the filters, the layout at 1280 px and 390 px (screenshots
kept as artifacts), grayscale legibility, and axe-core (from the npm registry) run in the page."""

import fcntl
import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance import capabilities
from conformance.session import results
from conformance.tools.cli import write_reports
from test_report import case, java_vr_doc, results_doc, sample

CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
REQUIRED = os.environ.get("BEAM_CONFORMANCE_REQUIRE_BROWSER") == "1"
AXE_VERSION = "4.10.3"
# the committed matrix's ten columns: ours, Beam's Python runners, and the runners we did not write
TEN = [
    "reference",
    "reference-job-server",
    "spark",
    "beam-direct",
    "beam-fnapi",
    "beam-local-job-service",
    "prism",
    "flink",
    "beam-spark-job-server",
    "beam-dask",
]

# what the committed results say of these targets (the kit's own three, and a Java job server's longest)
TARGET_INFO = {
    "reference-job-server": {
        "spec": "grpc",
        "endpoint": "127.0.0.1:54317",
        "environment_type": "LOOPBACK",
        "job_server_cmd": "python -m reference_runner.jobserver --port {port}",
    },
    "spark": {"spec": "spark", "python": "3.11.7", "master": "local[2]"},
    "beam-spark-job-server": {
        "spec": "beam-spark-job-server",
        "python": "3.11.7",
        "endpoint": "127.0.0.1:49589",
        "environment_type": "LOOPBACK",
        "runner_version": "Beam 2.62.0, Spark 3.5.0 (local[2])",
        "version_skew": "the job server is Beam 2.62.0, older than the submitting Python SDK (apache-beam 2.77.0)",
    },
}
OWN = ["reference", "reference-job-server", "spark"]


def _unavailable(reason: str):
    if REQUIRED:
        pytest.fail(f"{reason} (BEAM_CONFORMANCE_REQUIRE_BROWSER=1 requires it)")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install .[test])")
    if CHROMIUM is None:
        _unavailable("no chromium on this machine (apt-get install chromium)")
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        yield chromium
        chromium.close()


def artifacts_dir(tmp_path_factory) -> Path:
    """Where screenshots go: $BEAM_CONFORMANCE_ARTIFACTS (CI keeps it), else a pytest temp dir."""
    explicit = os.environ.get("BEAM_CONFORMANCE_ARTIFACTS")
    path = Path(explicit) if explicit else tmp_path_factory.mktemp("artifacts")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _write(docs, directory: Path, previous=None) -> Path:
    paths = []
    for doc in docs:
        p = directory / results.results_file_name(doc["target"], results.suite_of(doc))
        p.write_text(json.dumps(doc))
        paths.append(str(p))
    prev_dir = None
    if previous:
        prev_dir = directory / "previous"
        prev_dir.mkdir()
        for doc in previous:
            (prev_dir / f"results-{doc['target']}.json").write_text(json.dumps(doc))
    write_reports(paths, str(directory), str(prev_dir) if prev_dir else None)
    return directory / "capability-matrix.html"


MESSAGE = (
    "output differs from the Beam model:\ncheck 'check1': expected 3 element(s), runner produced 2; "
    "1 missing, 0 unexpected (checked: value, timestamp, window, pane)\n"
    "  missing (expected, not produced) (1):\n"
    "    ('a_rather_long_key_name_for_wrapping', [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]) "
    "@ 9.999s in [0s, 10s) pane(ON_TIME first last index=0 nonspec=0)"
)


def ten_targets():
    """Ten runs over every capability, with every verdict somewhere (deterministic)."""
    docs = []
    for t, name in enumerate(TEN):
        cases = []
        for i, cap in enumerate(c for c in capabilities.CAPABILITIES if not c.untestable):
            for k in range(2):
                pick = (i * 7 + t * 3 + k) % 11
                outcome = (
                    "skipped"
                    if t == 2 and cap.streaming  # refused up front: rows not tested
                    else "failed"
                    if pick == 0
                    else "expected-failure"
                    if pick in (1, 2)
                    else "skipped"
                    if pick == 3
                    else "passed"
                )
                cases.append(
                    case(
                        f"{cap.group}/{cap.id.replace('.', '_')}_{k}",
                        cap.id,
                        outcome,
                        MESSAGE if outcome != "passed" else "",
                        known="a known limitation of this runner" if outcome == "expected-failure" else None,
                    )
                )
        doc = results_doc(name, cases)
        doc["target_info"].update(TARGET_INFO.get(name, {"spec": name}))
        docs.append(doc)
    # Beam's Java ValidatesRunner runs of five of them: the section below the grid
    docs += [java_vr_doc(name, seed=t) for t, name in enumerate(TEN[:5])]
    previous = json.loads(json.dumps(docs[0]))
    for c in previous["cases"][:6]:
        c["outcome"] = "failed" if c["outcome"] == "passed" else "passed"
    return docs, [previous]


@pytest.fixture(scope="module")
def sample_page(browser, tmp_path_factory):
    html_path = _write(sample(), tmp_path_factory.mktemp("sample"))
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(10_000)
    page.goto(html_path.as_uri())
    yield page
    page.close()


@pytest.fixture(scope="module")
def ten_page_path(tmp_path_factory):
    docs, previous = ten_targets()
    return _write(docs, tmp_path_factory.mktemp("ten"), previous)


def test_grid_shows_targets_rows_and_verdicts(sample_page):
    page = sample_page
    assert page.locator("#matrix thead th.target").all_inner_texts() == ["runner-a", "runner-b"]
    assert page.locator("#matrix tr.section th").first.inner_text() == "What is being computed?"
    pardo_a = page.locator('#matrix tr.row:has(th:text-is("ParDo")) td[data-target="t0"]')
    assert pardo_a.inner_text().split() == ["✓", "2/2"]
    assert pardo_a.locator("a").get_attribute("aria-label") == "ParDo on runner-a: Yes, all 2 cases pass"
    sessions_a = page.locator('#matrix tr.row:has(th:text-is("Session windows")) td[data-target="t0"]')
    assert sessions_a.inner_text().split() == ["✗", "0/1"]
    # Colours are applied (not just class names): dark red for No, light green for Yes.
    assert sessions_a.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(164, 35, 29)"
    assert pardo_a.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(212, 239, 219)"
    gbk_b = page.locator('#matrix tr.row:has(th:text-is("GroupByKey")) td[data-target="t1"]')
    assert gbk_b.get_attribute("data-verdict") == "no"  # its only case errored


def test_a_cell_opens_its_cases_with_messages(sample_page):
    page = sample_page
    dialog = page.locator("#cases-dialog")
    assert not dialog.is_visible()
    cell = page.locator('#matrix tr.row:has(th:text-is("Session windows")) td[data-target="t0"] a')
    cell.click()
    assert dialog.is_visible()
    assert page.locator("#cases-dialog-title").inner_text() == "Session windows on runner-a: No, 0 of 1 case pass"
    assert "1 missing" in dialog.locator("pre.message").inner_text()
    assert "gbk/sessions" in dialog.locator("li.failing").inner_text()
    page.keyboard.press("Escape")
    assert not dialog.is_visible()
    assert page.evaluate("document.activeElement.getAttribute('href')") == cell.get_attribute("href")
    # a known failure shows its reason
    page.locator('#matrix tr.row:has(th:text-is("Stateful Processing")) td[data-target="t0"] a').click()
    assert dialog.locator(".known").first.inner_text() == "known failure: no state support"
    page.locator("#cases-dialog button.close").click()


def test_filters_by_text_verdict_and_target(sample_page):
    page = sample_page
    rows = page.locator("#matrix tr.row:visible th")
    all_rows = rows.count()
    page.fill("#f-text", "session")
    assert rows.all_inner_texts() == ["Session windows\n1 capability"]
    assert page.locator("#f-count").inner_text() == f"showing 1 of {all_rows} rows"
    page.fill("#f-text", "")
    page.select_option("#f-verdict", "no")
    shown = [t.split("\n")[0] for t in rows.all_inner_texts()]
    assert shown == ["GroupByKey", "Stateful Processing", "Session windows"]
    page.uncheck('#filters input[data-target="t1"]')  # runner-b's column goes, and its No rows
    assert not page.locator('#matrix thead th[data-target="t1"]').is_visible()
    assert [t.split("\n")[0] for t in rows.all_inner_texts()] == ["Stateful Processing", "Session windows"]
    page.check('#filters input[data-target="t1"]')
    page.select_option("#f-verdict", "outcome:unexpected-pass")  # a case outcome, not a verdict
    assert [t.split("\n")[0] for t in rows.all_inner_texts()] == ["ParDo"]
    page.select_option("#f-verdict", "")
    assert rows.count() == all_rows


@pytest.mark.parametrize("width, height", [(1280, 900), (390, 844)])
def test_layout_fits_and_header_and_first_column_stay(browser, ten_page_path, width, height, tmp_path_factory):
    page = browser.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(10_000)
    try:
        page.goto(ten_page_path.as_uri())
        out = artifacts_dir(tmp_path_factory)
        page.screenshot(path=str(out / f"matrix-{width}px.png"))
        page.screenshot(path=str(out / f"matrix-{width}px-full.png"), full_page=True)
        # the page itself never scrolls sideways
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        assert page.evaluate("document.body.scrollWidth") <= width
        wrap = page.locator(".grid-wrap")
        assert page.locator("#matrix thead th.target").count() == 10
        # ten targets fit at either width: the grid needs no sideways scrolling either
        assert wrap.evaluate("e => e.scrollWidth <= e.clientWidth")
        # every target's name shows whole (none cut short: two could then read alike), and every
        # cell is at least 24 px wide, a target a finger can hit
        names = page.locator("#matrix thead th.target span")
        assert names.evaluate_all("es => es.every(e => e.scrollHeight <= e.clientHeight + 1)"), "a name is cut"
        widths = (
            page.locator("#matrix tbody tr.row")
            .first.locator("td")
            .evaluate_all("es => es.map(e => e.getBoundingClientRect().width)")
        )
        assert len(widths) == 10 and min(widths) >= 24, widths
        # the targets are a table, one row group per target, that fits without scrolling sideways
        table = page.locator("table.targets")
        assert table.locator("tbody th[scope=rowgroup]").all_inner_texts() == [
            n + ("*" if n in OWN else "") for n in TEN
        ]
        assert page.locator(".targets-wrap").evaluate("e => e.scrollWidth <= e.clientWidth"), "the table scrolls"
        box = table.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, box
        # every count and wall time shows on one line (a number broken over two is misread)
        lines = table.locator("tbody tr:first-child td").evaluate_all(
            """es => es.map(e => { const r = document.createRange(); r.selectNodeContents(e);
                                   return new Set(Array.from(r.getClientRects(), q => Math.round(q.top))).size; })"""
        )
        assert lines == [1] * 7 * len(TEN), lines
        table.screenshot(path=str(out / f"matrix-{width}px-targets.png"))
        page.evaluate("window.scrollTo(0, 0)")
        # scroll the grid down: its header row stays at the top
        wrap.evaluate("e => { e.scrollTop = 600; }")
        assert wrap.evaluate("e => e.scrollTop") > 0
        top = wrap.evaluate("e => e.getBoundingClientRect().top + e.clientTop")
        left = wrap.evaluate("e => e.getBoundingClientRect().left + e.clientLeft")
        head = page.locator("#matrix thead th.corner").bounding_box()
        assert abs(head["y"] - top) < 1.5, (head, top)
        page.screenshot(path=str(out / f"matrix-{width}px-scrolled.png"))
        # with more targets than fit, the grid scrolls sideways inside itself: the first column stays
        page.add_style_tag(content="#matrix { min-width: 2000px; }")
        wrap.evaluate("e => { e.scrollLeft = 400; }")
        assert wrap.evaluate("e => e.scrollLeft") == 400
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        row = page.locator("#matrix tbody tr.row").nth(12)
        first, cell = row.locator("th").bounding_box(), row.locator("td").first.bounding_box()
        assert abs(first["x"] - left) < 1.5, (first, left)
        assert cell["x"] < first["x"] + first["width"], (cell, first)  # the cells did move under it
    finally:
        page.close()


def _luminance(rgb: str) -> float:
    r, g, b = (int(x) / 255 for x in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3])
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def test_verdicts_read_in_grayscale(browser, ten_page_path):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(10_000)
    try:
        page.goto(ten_page_path.as_uri())
        seen = {}
        for verdict, symbol in (("yes", "✓"), ("partially", "◐"), ("no", "✗")):
            cell = page.locator(f'#matrix td[data-verdict="{verdict}"]').first
            assert cell.locator(".sym").inner_text() == symbol
            seen[verdict] = _luminance(cell.evaluate("e => getComputedStyle(e).backgroundColor"))
        # lightness alone orders the verdicts: Yes lightest, No darkest, clearly apart
        assert seen["yes"] - seen["partially"] > 0.25 and seen["partially"] - seen["no"] > 0.25, seen
        untested = page.locator('#matrix td[data-verdict="untested"]').first
        assert untested.locator(".sym").inner_text() == "–"
        # changes since the previous run show in the cells of the first target
        assert page.locator('#matrix td[data-target="t0"] .change').count() >= 1
    finally:
        page.close()


def _axe_script() -> str:
    """axe-core's browser build, installed from the npm registry into a cache this test owns."""
    explicit = os.environ.get("BEAM_CONFORMANCE_AXE")
    if explicit:
        return Path(explicit).read_text()
    cache = Path(os.environ.get("BEAM_CONFORMANCE_NPM_CACHE") or Path(sys.prefix) / "share" / "beam-conformance-npm")
    script = cache / "node_modules" / "axe-core" / "axe.min.js"
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as lock:  # xdist workers may get here together
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not script.exists():
            npm = shutil.which("npm")
            if npm is None:
                _unavailable("npm is not installed, so axe-core cannot be fetched (apt-get install npm)")
            command = [npm, "install", "--prefix", str(cache), "--no-audit", "--no-fund", "--loglevel=error"]
            # quick retries: the registry has failed this machine's TLS handshake now and then
            # ("self-signed certificate in certificate chain") and answered the next try
            command += ["--fetch-retries=4", "--fetch-retry-mintimeout=2000", "--fetch-retry-maxtimeout=8000"]
            for attempt in range(3):
                done = subprocess.run(
                    [*command, f"axe-core@{AXE_VERSION}"], capture_output=True, text=True, timeout=300
                )
                if done.returncode == 0 and script.exists():
                    break
                time.sleep(5 * (attempt + 1))
            if done.returncode != 0 or not script.exists():
                _unavailable(f"npm could not install axe-core@{AXE_VERSION}: {done.stderr.strip()[-500:]}")
    return script.read_text()


@pytest.mark.parametrize("width, height", [(1280, 900), (390, 844)])
def test_axe_finds_no_serious_or_critical_violation(browser, ten_page_path, width, height):
    axe = _axe_script()
    page = browser.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(10_000)
    try:
        page.goto(ten_page_path.as_uri())
        page.add_script_tag(content=axe)
        problems = []
        for state in ("grid", "dialog open"):
            if state == "dialog open":
                page.locator('#matrix td[data-verdict="partially"] a').first.click()
            found = page.evaluate("""async () => {
                const r = await axe.run(document, {resultTypes: ['violations']});
                return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                               nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))}));
            }""")
            problems += [
                f"{state}: {v['impact']} {v['id']}: {v['help']} at {v['nodes']}"
                for v in found
                if v["impact"] in ("serious", "critical")
            ]
        assert not problems, "\n".join(problems)
    finally:
        page.close()


def _contrast(a: str, b: str) -> float:
    light, dark = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


# one row per fifth of passing cases: (row's capability, passing, run)
SHARES = [
    ("gbk.global", 1, 15),
    ("combine.globally", 5, 16),
    ("flatten.basic", 8, 15),
    ("side_inputs.singleton", 12, 16),
]
SHARES.append(("pardo.basic", 31, 32))


@pytest.fixture(scope="module")
def shares_page_path(tmp_path_factory):
    cases = [
        case(f"x/{cap}_{i}", cap, "passed" if i < passing else "failed", "" if i < passing else MESSAGE)
        for cap, passing, ran in SHARES
        for i in range(ran)
    ] + [case("x/yes", "gbk.sessions", "passed"), case("x/no", "timers.event_time", "failed", MESSAGE)]
    return _write([results_doc("my-runner", cases)], tmp_path_factory.mktemp("shares"))


def _shades(page, selector):
    return page.locator(selector).evaluate_all(
        "es => es.map(e => [+e.dataset.passed / +e.dataset.ran, getComputedStyle(e).backgroundColor,"
        " getComputedStyle(e).color])"
    )


def test_partially_is_shaded_by_the_share_of_cases_that_pass(browser, shares_page_path, ten_page_path):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(10_000)
    try:
        page.goto(shares_page_path.as_uri())
        yes = _luminance(
            page.locator('#matrix td[data-verdict="yes"]').evaluate("e => getComputedStyle(e).backgroundColor")
        )
        no = _luminance(
            page.locator('#matrix td[data-verdict="no"]').evaluate("e => getComputedStyle(e).backgroundColor")
        )
        shades = sorted(_shades(page, '#matrix td[data-verdict="partially"]'))
        assert [round(share, 3) for share, _, _ in shades] == [round(p / r, 3) for _, p, r in SHARES]
        # 1 of 15 and 31 of 32 differ: each fifth has its own shade, lighter (nearer Yes) as more pass
        lightness = [_luminance(bg) for _, bg, _ in shades]
        assert all(a < b for a, b in itertools.pairwise(lightness)), shades
        for (share, bg, fg), light in zip(shades, lightness, strict=True):
            # every shade still reads as Partially in grayscale, and its text stays legible (WCAG AA)
            assert yes - light > 0.25 and light - no > 0.25, (share, bg, yes, no)
            assert _contrast(bg, fg) >= 4.5, (share, bg, fg)
        # the legend shows the five shades, in the grid's colours
        legend = page.locator(".legend .scale .chip").evaluate_all(
            "es => es.map(e => getComputedStyle(e).backgroundColor)"
        )
        assert legend == [bg for _, bg, _ in shades], legend
        # on ten targets too, no cell is darker than one with fewer cases passing
        page.goto(ten_page_path.as_uri())
        ten = sorted(_shades(page, '#matrix td[data-verdict="partially"]'))
        assert len({bg for _, bg, _ in ten}) >= 4, ten
        for (share_a, bg_a, _), (share_b, bg_b, _) in itertools.pairwise(ten):
            assert _luminance(bg_a) <= _luminance(bg_b), (share_a, bg_a, share_b, bg_b)
    finally:
        page.close()


@pytest.mark.parametrize("width, height", [(1280, 900), (390, 844)])
def test_a_note_says_the_kits_own_columns_prove_little(browser, ten_page_path, sample_page, width, height):
    page = browser.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(10_000)
    try:
        page.goto(ten_page_path.as_uri())
        note = page.locator("#own-note")
        assert note.is_visible()
        # above the grid, where a reader meets the columns
        assert note.bounding_box()["y"] < page.locator("#matrix").bounding_box()["y"]
        text = note.inner_text()
        assert "reference, reference-job-server and spark are the kit's own runners" in text, text
        assert "written with" in text and "not evidence" in text, text
        # their columns carry the note's mark, the others do not
        marked = page.locator("#matrix thead th.target:has(.own-mark)").all_inner_texts()
        assert [t.rstrip("*") for t in marked] == OWN, marked
    finally:
        page.close()
    # results of runners the kit did not write only: no note
    assert sample_page.locator("#own-note").count() == 0

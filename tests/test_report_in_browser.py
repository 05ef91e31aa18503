"""The HTML matrix, opened in a real headless Chromium (Debian's package, driven by Playwright)."""
import json
import os
import shutil

import pytest

from conformance.cli import write_reports

from test_report import sample

CHROMIUM = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")


def _browser_or_skip():
    required = os.environ.get("BEAM_CONFORMANCE_REQUIRE_BROWSER") == "1"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if required:
            raise
        pytest.skip("playwright is not installed (pip install .[test])")
    if CHROMIUM is None:
        if required:
            pytest.fail("chromium is required (BEAM_CONFORMANCE_REQUIRE_BROWSER=1) but not installed")
        pytest.skip("no chromium on this machine (apt-get install chromium)")
    return sync_playwright


@pytest.fixture
def page(tmp_path):
    sync_playwright = _browser_or_skip()
    paths = []
    for doc in sample():
        p = tmp_path / f"results-{doc['target']}.json"
        p.write_text(json.dumps(doc))
        paths.append(str(p))
    write_reports(paths, str(tmp_path))
    with sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run"])
        try:
            pg = browser.new_page(viewport={"width": 1400, "height": 1000})
            pg.goto((tmp_path / "capability-matrix.html").as_uri())
            yield pg
            pg.screenshot(path=str(tmp_path / "matrix.png"), full_page=True)
        finally:
            browser.close()


def test_matrix_shows_targets_rows_and_verdicts(page):
    headers = page.locator("#matrix thead th.target").all_inner_texts()
    assert headers == ["runner-a", "runner-b"]
    assert page.locator("#matrix th.section").first.inner_text() == "What is being computed?"
    pardo_a = page.locator('[id="row:ParDo:runner-a"] summary')
    assert pardo_a.is_visible()
    assert pardo_a.inner_text() == "Yes all 2 cases pass"
    sessions_a = page.locator('[id="row:Session windows:runner-a"]')
    assert sessions_a.locator("summary").inner_text() == "No 0 of 1 case pass"
    # Verdict colours are applied (not just class names): red for No, green for Yes.
    assert sessions_a.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(247, 212, 212)"
    assert page.locator('[id="row:ParDo:runner-a"]').evaluate(
        "e => getComputedStyle(e).backgroundColor") == "rgb(217, 242, 217)"


def test_failure_messages_are_one_click_away(page):
    cell = page.locator('[id="cap:gbk.sessions:runner-a"]')
    message = cell.locator("pre.message")
    assert not message.is_visible()            # collapsed at first
    cell.locator("summary").click()
    assert message.is_visible()
    assert "1 missing" in message.inner_text()
    assert "gbk/sessions" in cell.locator("ul.failing").inner_text()


def test_known_failure_reason_is_shown(page):
    cell = page.locator('[id="cap:state.bag:runner-a"]')
    cell.locator("summary").click()
    assert cell.locator(".known").inner_text() == "known failure: no state support"


def test_summary_table_counts(page):
    rows = page.locator("#summary tr").all_inner_texts()
    assert rows[1].split("\t")[:4] == ["runner-a", "3", "1", "1"]

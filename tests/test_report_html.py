"""``clinbench report --html``: one self-contained page, checked in a real headless browser.

The browser tests drive Debian's ``chromium`` with Playwright (the ``browser`` extra;
Playwright's own browser downloads are never used) and skip when either is absent.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clinbench.cli.app import app
from clinbench.report import screenshot
from clinbench.report.html import HTML_NAME, chart_uris, render_html

runner = CliRunner(env={"COLUMNS": "300"})
REPO = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
#: the screenshot's flags: a quiet, offline, container-safe headless Chromium
CHROMIUM_ARGS = list(screenshot.CHROMIUM_ARGS)


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def page_folder(smoke_results, tmp_path_factory) -> Path:
    """A copy of the smoke results with its page written by the command line."""
    folder = Path(shutil.copytree(smoke_results, tmp_path_factory.mktemp("html") / "results"))
    result = invoke("report", "--results", folder, "--reproducible", "--html")
    assert result.exit_code == 0, result.output
    assert (folder / HTML_NAME).exists()
    return folder


def test_the_page_is_self_contained(page_folder):
    text = (page_folder / HTML_NAME).read_text()
    sources = re.findall(r'\b(?:src|href)="([^"]*)"', text)
    assert sources, "the page embeds its charts"
    # every chart is a data URI; the only link is to the Markdown report beside it
    embedded = "data:image/svg+xml;base64,"
    assert all(s.startswith(embedded) or s == "benchmark_report.md" for s in sources)
    assert "<link" not in text and "http://" not in text.replace("http://www.w3.org", "")
    n_svg = len(list((page_folder / "charts").glob("*.svg")))
    assert text.count('<img class="chart"') == n_svg > 0


def test_the_page_is_byte_identical_and_checked(page_folder):
    before = (page_folder / HTML_NAME).read_bytes()
    assert invoke("report", "--results", page_folder, "--check").exit_code == 0
    result = invoke("report", "--results", page_folder, "--reproducible", "--html", "--no-charts")
    assert result.exit_code == 0, result.output
    assert (page_folder / HTML_NAME).read_bytes() == before
    (page_folder / HTML_NAME).write_text(before.decode().replace("Verdict", "Verdikt"))
    try:
        result = invoke("report", "--results", page_folder, "--check")
        assert result.exit_code == 1
        assert HTML_NAME in result.output and "--html" in result.output
    finally:
        (page_folder / HTML_NAME).write_bytes(before)


def test_the_page_escapes_what_it_shows(page_folder):
    report = json.loads((page_folder / "benchmark_report.json").read_text())
    report["verdict"] = ["<script>alert(1)</script> & more"]
    text = render_html(report, page_folder / "charts")
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in text
    assert "<script>alert(1)" not in text


def test_charts_follow_the_order_they_were_drawn_in(page_folder, tmp_path):
    names = [n for n, _ in chart_uris(page_folder / "charts")]
    assert names[:2] == ["agent_comparison", "score_distribution"]
    assert chart_uris(tmp_path / "nothing") == []


# --------------------------------------------------------------------------- the browser
@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium is not installed (apt-get install chromium)")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, page_folder):
    p = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    p.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    p.on("pageerror", lambda e: problems.append(str(e)))
    p.on("requestfailed", lambda r: problems.append(f"failed request {r.url}"))
    p.goto((page_folder / HTML_NAME).as_uri(), wait_until="load")
    p.problems = problems
    yield p
    p.close()


def test_the_page_loads_without_console_errors(page):
    assert page.title() == "clinbench benchmark report"
    assert page.locator("ul.verdict li").count() > 0
    assert page.problems == []


def test_every_chart_renders(page, page_folder):
    sizes = page.eval_on_selector_all(
        "img.chart",
        "imgs => imgs.map(i => [i.alt, i.complete, i.naturalWidth, i.naturalHeight,"
        " i.getBoundingClientRect().width])",
    )
    assert len(sizes) == len(list((page_folder / "charts").glob("*.svg")))
    for name, complete, width, height, shown in sizes:
        assert complete and width > 0 and height > 0 and shown > 0, name


def _column(page, table: str, col: int) -> list[str]:
    return page.eval_on_selector_all(
        f"#{table} tbody tr",
        f"rows => rows.map(r => r.cells[{col}].getAttribute('data-sort')"
        f" ?? r.cells[{col}].textContent)",
    )


def test_tables_sort_by_number_both_ways(page):
    table = "aggregate-recruitment"
    header = page.locator(f"#{table} th", has_text=re.compile("^mean$"))
    before = [float(v) for v in _column(page, table, 1)]
    header.click()
    up = [float(v) for v in _column(page, table, 1)]
    assert up == sorted(before) and header.get_attribute("aria-sort") == "ascending"
    header.click()
    assert [float(v) for v in _column(page, table, 1)] == sorted(before, reverse=True)
    # the rows moved whole: each agent keeps its own mean
    agents = _column(page, table, 0)
    page.locator(f"#{table} th", has_text="agent").click()
    assert _column(page, table, 0) == sorted(agents)
    assert page.problems == []


def _screenshot(*args: object) -> subprocess.CompletedProcess:
    """The screenshot command in a process of its own (Playwright's sync API allows one
    running instance per thread, and the browser fixture holds one)."""
    return subprocess.run(
        [sys.executable, "-m", "clinbench.report.screenshot", *map(str, args)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_screenshot_is_reproducible_and_checked(browser, page_folder, tmp_path):
    page, image = page_folder / HTML_NAME, tmp_path / "report.png"
    assert _screenshot("--page", page, "--image", image).returncode == 0
    first = image.read_bytes()
    assert first.startswith(b"\x89PNG")
    assert json.loads(image.with_suffix(".json").read_text())["chromium"] == browser.version
    again = _screenshot("--page", page, "--image", tmp_path / "again.png")
    assert again.returncode == 0 and (tmp_path / "again.png").read_bytes() == first
    assert _screenshot("--page", page, "--image", image, "--check").returncode == 0
    image.write_bytes(first[:-8] + b"\0" * 8)
    stale = _screenshot("--page", page, "--image", image, "--check")
    assert stale.returncode == 1 and "stale" in stale.stderr
    missing = _screenshot("--page", tmp_path / "none.html", "--image", image)
    assert missing.returncode == 2 and "no page" in missing.stderr

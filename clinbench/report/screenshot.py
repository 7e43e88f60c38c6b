"""A screenshot of a report page in headless Chromium, and a check that it is current.

``python -m clinbench.report.screenshot`` renders the canonical page
(``data/sweep_results/benchmark_report.html``) into ``docs/images/benchmark_report.png``
and records the browser's version beside it; ``--check`` shoots again into memory and
exits 1 if the committed image differs, as ``clinbench charts --check`` does for the
charts. Screenshots are byte-identical for the same page and the same Chromium build
(fonts and rasteriser change between builds), so the check compares only under the
build recorded beside the image and otherwise says so and passes; the page itself is
checked byte-exactly by ``clinbench report --check``, which needs no browser. Needs the
``browser`` extra (Playwright) and a system Chromium (Debian's ``chromium``);
Playwright's own browser downloads are not used.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from clinbench.charts import CANONICAL_RESULTS, DOCS_IMAGES
from clinbench.report.html import HTML_NAME

PAGE = CANONICAL_RESULTS / HTML_NAME
IMAGE = DOCS_IMAGES / "benchmark_report.png"
#: The viewport shot: the verdict, the protocol and the first family's tables.
VIEWPORT = {"width": 1200, "height": 1600}
#: A quiet, offline, container-safe headless Chromium with reproducible rasterising.
CHROMIUM_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--font-render-hinting=none",
    "--force-color-profile=srgb",
    "--disable-lcd-text",
)


class BrowserMissing(RuntimeError):
    """Playwright or Chromium is not installed (exit 2 with how to install them)."""


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        raise BrowserMissing("no chromium on PATH: apt-get install chromium")
    return path


def shoot(page: Path) -> tuple[bytes, str]:
    """The PNG of ``page`` at ``VIEWPORT`` and the browser version that drew it."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        raise BrowserMissing(
            'playwright is not installed: pip install -c constraints.txt -e ".[browser]"'
        ) from None
    executable = chromium()
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=list(CHROMIUM_ARGS))
        try:
            tab = browser.new_page(viewport=VIEWPORT, device_scale_factor=1)
            tab.goto(Path(page).resolve().as_uri(), wait_until="load")
            png = tab.screenshot(animations="disabled", caret="hide")
            return png, browser.version
        finally:
            browser.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the image is stale")
    parser.add_argument("--page", type=Path, default=PAGE)
    parser.add_argument("--image", type=Path, default=IMAGE)
    args = parser.parse_args(argv)
    if not args.page.is_file():
        hint = "clinbench report --reproducible --html"
        print(f"error: no page at {args.page}: {hint}", file=sys.stderr)
        return 2
    try:
        png, version = shoot(args.page)
    except BrowserMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    record = args.image.with_suffix(".json")
    if not args.check:
        args.image.parent.mkdir(parents=True, exist_ok=True)
        args.image.write_bytes(png)
        record.write_text(json.dumps({"chromium": version, "viewport": VIEWPORT}, indent=2) + "\n")
        print(f"screenshot written to {args.image} (Chromium {version})")
        return 0
    if args.image.exists() and args.image.read_bytes() == png:
        print(f"screenshot is up to date ({args.image})")
        return 0
    then = json.loads(record.read_text()).get("chromium") if record.exists() else None
    if then is not None and then != version:
        # another build draws other pixels: not comparable, and not a stale image
        print(
            f"note: {args.image} was taken with Chromium {then}, this is {version}; not "
            "compared (the page is checked by clinbench report --check)",
            file=sys.stderr,
        )
        return 0
    print(f"stale {args.image}: differs from a new screenshot of {args.page}", file=sys.stderr)
    print("regenerate with: python -m clinbench.report.screenshot", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())

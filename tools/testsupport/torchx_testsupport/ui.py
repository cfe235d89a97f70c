"""What the dashboard's tests share: the real ``torchx ui`` in a process of its own, and
Debian's headless Chromium (tools/chromium-up.sh) driven by Playwright looking at it.

Screenshots go to ``$TORCHX_UI_SHOTS`` when set (docs/_static/ui holds the ones the docs
show), else to the test's temporary directory.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from torchx_testsupport import backend_missing

WIDTH = 1280
"""The window width every page is checked and shot at."""

TORCHX = str(Path(sys.executable).parent / "torchx")


class Ui:
    """A running ``torchx ui``: ``url`` is the line it printed (with the token)."""

    def __init__(self, proc: subprocess.Popen[str], url: str, first_line: str) -> None:
        self.proc = proc
        self.url = url
        self.first_line = first_line
        self.base = url.split("/?", 1)[0]
        self.token = url.rsplit("token=", 1)[-1]

    def page_url(self, path: str) -> str:
        """``path`` on this server, with the token (as a user's first visit has it)."""
        joiner = "&" if "?" in path else "?"
        return f"{self.base}{path}{joiner}token={self.token}"


@contextmanager
def torchx_ui(*args: str, cwd: Path, env: dict[str, str] | None = None) -> Iterator[Ui]:
    """``torchx ui --no-browser --port 0 ARGS`` from ``cwd``, until the block ends (then
    stopped by its pid, as Ctrl-C would)."""
    proc = subprocess.Popen(  # noqa: S603
        [TORCHX, "ui", "--no-browser", "--port", "0", *args],
        cwd=cwd,
        env=env if env is not None else dict(os.environ),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: list[str] = []
    found = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if line.startswith("http"):
                found.set()
        found.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        if not found.wait(60) or not lines or not lines[-1].startswith("http"):
            proc.kill()
            _, err = proc.communicate(timeout=30)
            raise AssertionError(f"torchx ui printed no URL: {lines} {err[-2000:]}")
        yield Ui(proc, lines[-1], lines[0])
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def chromium_path() -> str:
    """Debian's Chromium binary (the package's /usr/bin/chromium is a wrapper script)."""
    for candidate in ("/usr/lib/chromium/chromium", shutil.which("chromium") or ""):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    backend_missing(
        "TORCHX_REQUIRE_CHROMIUM", "Chromium is not installed; run tools/chromium-up.sh"
    )


@contextmanager
def browser_page() -> Iterator[Any]:
    """A fresh page of headless Chromium, 1280 pixels wide."""
    from playwright.sync_api import sync_playwright

    executable = chromium_path()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": WIDTH, "height": 900})
            yield page
        finally:
            browser.close()


def loaded(page: Any, times: int = 1, timeout_s: float = 60) -> None:
    """Waits until the page has rendered the server's answer ``times`` times."""
    page.wait_for_function(
        f"Number(document.body.dataset.loaded) >= {times}", timeout=timeout_s * 1000
    )


def until(page: Any, condition: str, timeout_s: float = 60) -> None:
    """Waits until the JavaScript ``condition`` holds in the page."""
    page.wait_for_function(condition, timeout=timeout_s * 1000)


_CUT_OFF = """() => {
  const cut = [];
  const width = window.innerWidth;
  if (document.documentElement.scrollWidth > width + 1) cut.push("the page scrolls sideways");
  for (const table of document.querySelectorAll("table")) {
    const box = table.getBoundingClientRect();
    if (box.width && box.right > width + 1) cut.push("table #" + table.id + " ends at " + box.right);
    for (const cell of table.querySelectorAll("th, td")) {
      if (cell.scrollWidth > cell.clientWidth + 1)
        cut.push("#" + table.id + " cell cut off: " + cell.textContent.slice(0, 60));
    }
  }
  return cut;
}"""


def shoot(page: Any, name: str, fallback_dir: Path) -> Path:
    """Checks that nothing is cut off at 1280 px, then saves a full-page screenshot."""
    cut = page.evaluate(_CUT_OFF)
    assert cut == [], f"{name}: cut off at {WIDTH} px: {cut[:5]}"
    where = Path(os.environ.get("TORCHX_UI_SHOTS") or fallback_dir)
    where.mkdir(parents=True, exist_ok=True)
    path = where / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def texts(page: Any, selector: str) -> list[str]:
    """The text of every element ``selector`` matches."""
    return [str(t) for t in page.eval_on_selector_all(selector, "els => els.map(e => e.textContent)")]

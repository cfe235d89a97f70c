"""What the dashboard's tests share: the real ``torchx ui`` in a process of its own, and
Debian's headless Chromium (tools/chromium-up.sh) driven by Playwright looking at it.

Screenshots go to ``$TORCHX_UI_SHOTS`` when set (docs/_static/ui holds the ones the docs
show), else to the test's temporary directory.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from torchx_testsupport import backend_missing

TYPE_CHECKING = False
if TYPE_CHECKING:
    from torchx.specs import AppDef

WIDTH = 1280
"""The window width every page is checked and shot at."""

MAX_SHOT_HEIGHT = 2400
"""A page taller than this is shot as the window shows it (1280 x 900)."""

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
    proc = subprocess.Popen(
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
        ui = Ui(proc, lines[-1], lines[0])
        _answers(ui.base.replace(socket.gethostname(), "127.0.0.1"))
        yield ui
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _answers(base: str) -> None:
    """Returns once the server answers HTTP (its API 401 without the token): it is serving."""
    import time
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(base + "/api/apps", timeout=10)
        except urllib.error.HTTPError as e:
            assert e.code == 401, e
            return
        except OSError:
            assert time.monotonic() < deadline, f"{base} never answered"
            time.sleep(0.05)


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
    if (box.width && box.right > width + 1) cut.push("#" + table.id + " ends at " + box.right);
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
    # the whole page, unless it is a long list (a cluster's thousands of jobs): its top
    tall = page.evaluate("document.documentElement.scrollHeight") > MAX_SHOT_HEIGHT
    page.screenshot(path=str(path), full_page=not tall)
    return path


def click_confirming(page: Any, selector: str, *, accept: bool) -> list[str]:
    """Clicks ``selector`` and answers the confirmation it opens (``accept`` or dismiss);
    the list gets the dialog's message once the browser has shown it."""
    messages: list[str] = []

    def answer(dialog: Any) -> None:
        messages.append(dialog.message)
        if accept:
            dialog.accept()
        else:
            dialog.dismiss()

    page.once("dialog", answer)
    page.click(selector)
    return messages


def texts(page: Any, selector: str) -> list[str]:
    """The text of every element ``selector`` matches."""
    return [
        str(t) for t in page.eval_on_selector_all(selector, "els => els.map(e => e.textContent)")
    ]


def shell_app(name: str, script: str) -> AppDef:
    """An app of one role ``name`` running ``script`` with ``sh -c`` from the current
    directory (its image on local_cwd)."""
    from torchx.specs import AppDef, Resource, Role

    resource = Resource(cpu=1, gpu=0, memMB=128)
    role = Role(name, os.getcwd(), entrypoint="sh", args=["-c", script], resource=resource)
    return AppDef(name, [role])


def app_id_of(handle: str) -> str:
    """The app id in ``handle`` (``scheduler://session/APP_ID``; Slurm's may hold commas,
    Kubernetes' colons)."""
    return handle.split("://", 1)[1].split("/", 1)[1]


def rows_of(page: Any) -> dict[str, dict[str, Any]]:
    """The apps table, by handle: state, age, the detail cell's text, the progress bar."""
    found = page.eval_on_selector_all(
        "#apps tbody tr",
        """els => els.map(e => ({handle: e.dataset.handle, state: e.dataset.state,
            age: e.querySelector('.age').textContent,
            detail: e.querySelector('.detail').textContent,
            bar: (e.querySelector('[role=progressbar]') || {}).ariaValueNow || null}))""",
    )
    return {row["handle"]: row for row in found}


def check_a_backend(
    ui: Ui,
    page: Any,
    handles: dict[str, str],
    *,
    cause: str,
    name: str,
    shots: Path,
    cancel: str = "waiting",
) -> None:
    """The pages of one real backend's apps, by their key in ``handles``: ``failed``
    (printed ``boom`` on stderr and exited 3; its root cause reads ``cause``) and, where the
    backend has them, ``running`` (running, reported step 3 of 4 and a loss of 0.33),
    ``reported`` (ended after those reports: its page still shows them), ``busy`` (running,
    nothing reported) and ``waiting`` (queued, with the scheduler's reason). The app of key
    ``cancel`` is cancelled from its page after a confirmation. Each page shot as
    ``NAME-...``."""
    page.goto(ui.page_url("/"))
    loaded(page)
    until(page, "document.querySelectorAll('#apps .failure').length >= 1")
    if "running" in handles:
        until(page, "document.querySelector('#apps [role=progressbar]') !== null")
    if "waiting" in handles:  # the listing may call it running until a status read says not
        until(page, "document.querySelector('#apps tr[data-state=PENDING]') !== null")
    rows = rows_of(page)
    assert all(r["age"] for r in rows.values()), rows
    expected = {"failed": "FAILED", "running": "RUNNING", "reported": "SUCCEEDED",
                "busy": "RUNNING", "waiting": "PENDING"}  # fmt: skip
    for key, handle in handles.items():
        assert rows[handle]["state"] == expected[key], (key, rows)
    assert rows[handles["failed"]]["detail"] == cause, rows
    if "running" in handles:
        running = rows[handles["running"]]
        assert running["bar"] == "75" and "loss=0.33" in running["detail"], running
    if "waiting" in handles:
        assert rows[handles["waiting"]]["detail"].startswith("waiting for"), rows
    shoot(page, f"{name}-apps", shots)

    page.goto(f"{ui.base}/app/{app_id_of(handles['failed'])}")
    loaded(page)
    assert page.text_content("#failure strong") == cause.split(": ", 1)[0] + ": exited with code 3"
    assert "boom" in (page.text_content("#failure-log") or "")
    assert "FAILED" in texts(page, "#replicas tbody td")
    until(page, "document.getElementById('log').dataset.ended === '1'")
    assert "boom" in (page.text_content("#log") or "")
    shoot(page, f"{name}-app-failed", shots)

    for key in ("running", "reported"):
        if key in handles:
            page.goto(f"{ui.base}/app/{app_id_of(handles[key])}")
            loaded(page)
            assert page.get_attribute("#progress [role=progressbar]", "aria-valuenow") == "75"
            until(page, "document.querySelector('#charts [data-metric=loss]') !== null")
            until(page, "(document.getElementById('log').textContent || '')"
                        ".includes('step 3 done')")  # fmt: skip
            # the progress protocol is the chart's, not the log's
            assert "TORCHX_PROGRESS" not in (page.text_content("#log") or "")
            assert [r for r in texts(page, "#timeline .row > span:first-child") if r == "running"]
            shoot(page, f"{name}-app-{key}", shots)

    page.goto(f"{ui.base}/app/{app_id_of(handles[cancel])}")
    loaded(page)
    if cancel == "waiting":
        waiting = page.text_content("#waiting") or ""
        assert waiting.startswith("Waiting"), waiting
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#cancel")
    until(page, "document.body.dataset.state === 'CANCELLED'", timeout_s=120)

"""``torchx ui`` in headless Chromium against real apps on local_cwd: a failed one, a
finished one, one running and reporting progress, a sweep with a failed element; beside
a scheduler that does not answer and one that is down. The pages' DOM is checked, each
page is shot at 1280 px and fails when a table is cut off."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from torchx_testsupport.progress import python_reporter, reported
from torchx_testsupport.sweep import COMPONENT
from torchx_testsupport.ui import (
    browser_page,
    click_confirming,
    loaded,
    rows_of,
    shell_app,
    shoot,
    texts,
    torchx_ui,
    until,
)

from torchx.runner import get_runner
from torchx.specs import AppState

pytestmark = pytest.mark.timeout(300)

TICKS = "i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.3; done"
"""A running app's output after its progress reports: a line every 0.3 s, until cancelled."""


@pytest.fixture
def apps(workdir: Path) -> Iterator[dict[str, str]]:
    """The handles of the four apps, once each is in the state the tests look for."""
    reports = python_reporter(sys.executable).rsplit("; sleep", 1)[0]
    with get_runner() as runner:
        handles = {
            "failed": runner.run(
                shell_app("crash", "echo starting; echo 'boom: bad batch' >&2; exit 3"), "local_cwd"
            ),
            "done": runner.run(shell_app("tidy", "echo all good"), "local_cwd"),
            "running": runner.run(shell_app("train", f"{reports}; {TICKS}"), "local_cwd"),
            "sweep": runner.run_sweep(
                COMPONENT, {"fail_batch": 16}, {"batch": [8, 16]}, "local_cwd"
            ),
        }
        for kind in ("failed", "done", "sweep"):
            runner.wait(handles[kind], wait_interval=0.2)
        reported(runner, handles["running"])
        try:
            yield handles
        finally:
            runner.cancel(handles["running"])


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never answers: a scheduler that hangs."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        yield sock.getsockname()[1]


def _app_id(handle: str) -> str:
    return handle.rsplit("/", 1)[-1]


def test_the_apps_page_shows_every_app_and_each_scheduler(
    apps: dict[str, str], workdir: Path, silent_port: int, tmp_path: Path
) -> None:
    (workdir / ".torchxconfig").write_text(f"[ray]\ndashboard_address = 127.0.0.1:{silent_port}\n")
    env = {**os.environ, "KUBECONFIG": str(tmp_path / "no-such-kubeconfig")}
    with (
        torchx_ui("-s", "local_cwd,ray,kubernetes", cwd=workdir, env=env) as ui,
        browser_page() as page,
    ):
        assert ui.url.startswith("http://127.0.0.1:"), ui.url
        page.goto(ui.page_url("/"))
        loaded(page)
        # local_cwd's apps are there while ray has not answered: nothing waits for it
        until(page, "document.querySelectorAll('#apps tbody tr').length === 4")
        chips = dict(page.eval_on_selector_all(
            "#schedulers .sched", "els => els.map(e => [e.dataset.scheduler, e.dataset.state])"
        ))  # fmt: skip
        assert chips["local_cwd"] == "ok"
        assert chips["ray"] in ("listing", "not answering"), chips
        until(
            page,
            "document.querySelector('.sched[data-scheduler=kubernetes]').dataset.state === 'down'",
        )
        assert "token" not in page.url  # the page keeps it, out of the address bar
        # the root causes and the progress fill in as their status reads come back
        until(page, "document.querySelectorAll('#apps .failure').length === 2")
        until(page, "document.querySelector('#apps [role=progressbar]') !== null")
        rows = rows_of(page)
        assert {h: r["state"] for h, r in rows.items()} == {
            apps["failed"]: "FAILED",
            apps["done"]: "SUCCEEDED",
            apps["running"]: "RUNNING",
            apps["sweep"]: "FAILED",
        }
        assert all(r["age"] for r in rows.values()), rows
        assert rows[apps["failed"]]["detail"] == "crash[0]: exited with code 3"
        sweep_cause = "train[1]: sweep element 1 (batch=16): exited with code 1"
        assert rows[apps["sweep"]]["detail"] == sweep_cause, rows
        running = rows[apps["running"]]
        assert running["bar"] == "75" and "(3/4)" in running["detail"], running
        assert "loss=0.33" in running["detail"], running
        shoot(page, "apps", tmp_path)

        # filters: by state, by name (a glob), by scheduler; kept in the address
        page.select_option("#f-state", "FAILED")
        assert sorted(texts(page, "#apps tbody td.name")) == ["crash", "sweep"]
        assert "state=FAILED" in page.url
        page.select_option("#f-state", "")
        page.fill("#f-name", "tr*")
        assert texts(page, "#apps tbody td.name") == ["train"]
        page.goto(ui.base + "/?state=SUCCEEDED&scheduler=local_cwd")
        loaded(page)
        assert texts(page, "#apps tbody td.name") == ["tidy"]


def test_the_page_of_a_failed_app_shows_its_root_cause_and_log(
    apps: dict[str, str], workdir: Path, tmp_path: Path
) -> None:
    with torchx_ui("-s", "local_cwd", cwd=workdir) as ui, browser_page() as page:
        page.goto(ui.page_url(f"/app/{_app_id(apps['failed'])}"))
        loaded(page)
        assert page.text_content("#failure strong") == "crash[0]: exited with code 3"
        assert "boom: bad batch" in page.text_content("#failure-log")
        phases = texts(page, "#timeline .row > span:first-child")
        assert phases[0] == "submitted" and "running" in phases and phases[-1] == "finished"
        assert texts(page, "#replicas tbody td") == ["crash", "0", "FAILED", "localhost"]
        (attempt,) = page.eval_on_selector_all(
            "#attempts tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
        )
        assert attempt[:2] == ["0", "FAILED"] and attempt[3] == "exited with code 3", attempt
        assert page.is_hidden("#cancel")  # it ended: nothing to cancel
        until(page, "document.getElementById('log').dataset.ended === '1'")
        assert page.text_content("#log") == "starting\nboom: bad batch"
        shoot(page, "app-failed", tmp_path)

        page.goto(f"{ui.base}/app/{_app_id(apps['sweep'])}")
        loaded(page)
        assert page.text_content("#array-line") == "2 elements: 1 succeeded, 1 failed; failed: 1"
        elements = texts(page, "#elements tbody td")
        assert elements == ["0", "batch=8", "SUCCEEDED", "log", "1", "batch=16", "FAILED", "log"]
        assert page.text_content("#failure strong") == "train[1]: exited with code 1"
        # each element's log: the failed one first, then the one chosen
        assert page.input_value("#log-replica") == "train/1"
        until(page, "document.getElementById('log').dataset.ended === '1'")
        assert page.text_content("#log") == "lr=0.1 batch=16 index=1 size=2"
        page.select_option("#log-replica", "train/0")
        until(page, "document.getElementById('log').dataset.ended === '1'")
        assert page.text_content("#log") == "lr=0.1 batch=8 index=0 size=2"
        shoot(page, "app-sweep", tmp_path)


def test_the_page_of_a_running_app_follows_its_log_and_cancels_it(
    apps: dict[str, str], workdir: Path, tmp_path: Path
) -> None:
    handle = apps["running"]
    with torchx_ui("-s", "local_cwd", cwd=workdir) as ui, browser_page() as page:
        page.goto(ui.page_url(f"/app/{_app_id(handle)}"))
        loaded(page)
        assert page.get_attribute("#progress [role=progressbar]", "aria-valuenow") == "75"
        assert "ETA" in page.text_content("#progress")
        until(page, "document.querySelector('#charts [data-metric=loss]') !== null")
        assert "loss: 0.330 at step 3" in page.text_content("#charts [data-metric=loss]")
        # the log is followed: lines printed after the page opened arrive
        until(page, "Number(document.getElementById('log').dataset.lines) > 0")
        seen = int(page.get_attribute("#log", "data-lines") or 0)
        until(page, f"Number(document.getElementById('log').dataset.lines) >= {seen + 3}")
        assert "tick" in page.text_content("#log")
        shoot(page, "app-running", tmp_path)

        # cancel asks first: dismissed, the app runs on; accepted, it is cancelled
        click_confirming(page, "#cancel", accept=False)
        assert "cancel requested" not in (page.text_content("#banner") or "")
        with get_runner() as runner:
            status = runner.status(handle)
            assert status is not None and status.state == AppState.RUNNING
            messages = click_confirming(page, "#cancel", accept=True)
            until(page, "document.body.dataset.state === 'CANCELLED'")
            assert messages == [f"Cancel {handle}? Its replicas are stopped."]
            status = runner.status(handle)
            assert status is not None and status.state == AppState.CANCELLED
        until(page, "document.getElementById('log').dataset.ended === '1'")
        assert page.is_hidden("#cancel")


_WORDS_WHOLE = """(selector) => {
  // every word of a header or a badge lies on one line box, and none spills out of its box
  const broken = [];
  for (const node of document.querySelectorAll(selector)) {
    if (!node.getClientRects().length) continue; // hidden
    if (node.scrollWidth > node.clientWidth + 1) broken.push(node.textContent + " spills over");
    const walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
    for (let text = walker.nextNode(); text; text = walker.nextNode()) {
      for (const match of text.data.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(text, match.index);
        range.setEnd(text, match.index + match[0].length);
        if (range.getClientRects().length > 1) broken.push(match[0] + " breaks");
      }
    }
  }
  return broken;
}"""


def test_at_800_px_no_badge_or_header_breaks_mid_word(apps: dict[str, str], workdir: Path) -> None:
    with torchx_ui("-s", "local_cwd", cwd=workdir) as ui, browser_page() as page:
        page.set_viewport_size({"width": 800, "height": 900})
        page.goto(ui.page_url("/"))
        loaded(page)
        until(page, "document.querySelectorAll('#apps tbody tr').length === 4")
        until(page, "document.querySelectorAll('#apps .failure').length === 2")
        assert page.evaluate(_WORDS_WHOLE, "th, .state") == []
        for kind in ("sweep", "failed"):
            page.goto(f"{ui.base}/app/{_app_id(apps[kind])}")
            loaded(page)
            assert page.evaluate(_WORDS_WHOLE, "th, .state, h1") == [], kind


def test_a_sweeps_elements_link_their_logs_and_retry_failed_asks_first(
    apps: dict[str, str], workdir: Path
) -> None:
    handle = apps["sweep"]
    with torchx_ui("-s", "local_cwd", cwd=workdir) as ui, browser_page() as page:
        page.goto(ui.page_url(f"/app/{_app_id(handle)}"))
        loaded(page)
        until(page, "document.getElementById('log').dataset.ended === '1'")
        page.click("#elements a.element-log[data-replica='train/0']")
        assert page.input_value("#log-replica") == "train/0"
        until(page, "document.getElementById('log').dataset.ended === '1'")
        assert page.text_content("#log") == "lr=0.1 batch=8 index=0 size=2"

        assert page.is_visible("#retry")  # it ended with a failed element
        click_confirming(page, "#retry", accept=False)
        messages = click_confirming(page, "#retry", accept=True)
        until(page, "document.querySelector('#banner a') !== null")
        assert messages == [
            f"Submit the 1 failed elements of {handle} again (1)? They run as a new app."
        ]
        retried = page.text_content("#banner a") or ""
        with get_runner() as runner:
            assert [a.app_handle for a in runner.list("local_cwd")].count(retried) == 1
            status = runner.wait(retried, wait_interval=0.2)  # dismissed once: one retry
            assert status is not None and status.array is not None
            assert [e.index for e in status.array.elements] == [1]
        page.click("#banner a")  # the new app's page, numbered by the element's index
        loaded(page)
        assert texts(page, "#elements tbody td")[:3] == ["1", "batch=16", "FAILED"]
        assert page.text_content("#failure strong") == "train[1]: exited with code 1"


_SHOWN_WHOLE = """(selector) => {
  // the element's text is all there and nothing of it is clipped by it or a box around it
  const node = document.querySelector(selector);
  for (let box = node; box && box !== document.body; box = box.parentElement) {
    const style = getComputedStyle(box);
    const clips = style.overflowX !== "visible" || style.overflowY !== "visible";
    if (clips && (box.scrollHeight > box.clientHeight + 1 || box.scrollWidth > box.clientWidth + 1))
      return box.tagName + "#" + box.id + "." + box.className + " clips it";
  }
  return node.textContent;
}"""


def test_an_app_newer_than_the_last_listing_is_found_and_its_long_error_read_whole(
    workdir: Path,
) -> None:
    """A 3,000-character error (one word) reads in full on both pages, with the failing
    rank's own traceback on the app's."""
    with torchx_ui("-s", "local_cwd", cwd=workdir) as ui, browser_page() as page:
        page.goto(ui.page_url("/"))
        loaded(page)  # listed once, without the app below
        with get_runner() as runner:
            script = "python3 -c \"raise ValueError('x' * 3000 + ' END')\""
            handle = runner.run(shell_app("late", script), "local_cwd")
            runner.wait(handle, wait_interval=0.2)
        page.goto(f"{ui.base}/app/{_app_id(handle)}")  # no ?scheduler: not in a listing yet
        loaded(page)
        assert page.text_content("#title") == f"{_app_id(handle)} FAILED"
        error = "ValueError: " + "x" * 3000 + " END"
        assert page.evaluate(_SHOWN_WHOLE, "#failure div") == error
        traceback = page.text_content("#failure-traceback") or ""
        assert traceback.startswith("Traceback (most recent call last):"), traceback
        assert traceback.endswith(error), traceback[-80:]

        page.goto(f"{ui.base}/")
        loaded(page)
        row = f'#apps tr[data-handle="{handle}"] .failure'
        page.wait_for_selector(row, timeout=60_000)
        shown = page.evaluate(_SHOWN_WHOLE, row)
        assert shown == f"late[0]: a Python exception: {error}", shown[:200]

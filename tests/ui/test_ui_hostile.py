"""The fourth hostile-input audit's dashboard findings, in headless Chromium: a page
served by another program on another local port (a second origin of the same host)
cannot cancel an app or read the token, and receives no cookie of the dashboard; a
job's hostile progress reports (a NaN, a metric named ``constructor``, an escape
sequence in a name) leave the apps page valid and the app's page whole."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from torchx_testsupport.ui import browser_page, loaded, shell_app, torchx_ui, until

from torchx.runner import get_runner
from torchx.specs import AppState

pytestmark = pytest.mark.timeout(300)

HOSTILE_REPORTS = (
    'echo "TORCHX_PROGRESS {\\"step\\": 1, \\"total\\": 4, \\"metrics\\": {\\"loss\\": 0.5,'
    ' \\"constructor\\": 0.1, \\"__proto__\\": 2}}" >&2;'
    ' echo "TORCHX_PROGRESS {\\"step\\": 2, \\"total\\": 4, \\"metrics\\": {\\"loss\\": NaN,'
    ' \\"constructor\\": 0.2, \\"__proto__\\": 3, \\"\\\\u001b[31mred\\": 1}}" >&2;'
    " echo ready; sleep 600"
)


class _Elsewhere:
    """Another local server (another port: another origin of 127.0.0.1): it serves the
    attacker's page and notes the Cookie header of every request it gets."""

    def __init__(self, page: str) -> None:
        self.cookies: list[str] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.cookies.append(self.headers.get("Cookie") or "")
                body = page.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def running(workdir: Path) -> Iterator[str]:
    with get_runner() as runner:
        handle = runner.run(shell_app("train", HOSTILE_REPORTS), "local_cwd")
        try:
            yield handle
        finally:
            runner.cancel(handle)


def _forging_page(dashboard: str, app_id: str) -> str:
    """What the audit's page did: a form post and fetches (with and without credentials,
    naming another scheduler too) to the dashboard's cancel, and a look for its token."""
    cancel = f"{dashboard}/api/cancel/{app_id}"
    return f"""<!doctype html><html><body>
<form id="f" method="POST" action="{cancel}" target="sink"></form>
<iframe name="sink"></iframe>
<script>
window.tried = [];
const attempts = [
  fetch("{cancel}", {{method: "POST", mode: "no-cors", credentials: "include"}}),
  fetch("{cancel}?scheduler=local_cwd", {{method: "POST", mode: "no-cors"}}),
  fetch("{cancel}", {{method: "POST", credentials: "include",
                      headers: {{"Authorization": "token guess"}}}}),
];
Promise.allSettled(attempts).then((done) => {{
  window.tried = done.map((d) => d.status);
  window.token = localStorage.getItem("torchx_ui_token");
  document.getElementById("f").submit();
  setTimeout(() => {{ document.body.dataset.done = "1"; }}, 1500);
}});
</script></body></html>"""


def test_a_page_of_another_local_port_cannot_cancel_or_read_the_token(
    running: str, workdir: Path
) -> None:
    app_id = running.rsplit("/", 1)[-1]
    with torchx_ui("-s", "local_cwd", cwd=workdir) as ui, browser_page() as page:
        page.goto(ui.page_url("/"))  # the user opens the dashboard first, in the same browser
        loaded(page)
        until(page, "document.querySelectorAll('#apps tbody tr').length >= 1")
        assert page.context.cookies() == []  # the dashboard sets no cookie at all
        elsewhere = _Elsewhere(_forging_page(ui.base, app_id))
        try:
            page.goto(elsewhere.url)
            until(page, "document.body.dataset.done === '1'")
            assert page.evaluate("window.token") is None  # another origin's storage
            page.goto(elsewhere.url)  # a second visit: would carry a cookie set by now
        finally:
            elsewhere.close()
        assert elsewhere.cookies and set(elsewhere.cookies) == {""}, elsewhere.cookies
        with get_runner() as runner:
            status = runner.status(running)
            assert status is not None and status.state == AppState.RUNNING, status


def test_hostile_progress_reports_leave_the_pages_whole(running: str, workdir: Path) -> None:
    app_id = running.rsplit("/", 1)[-1]
    with torchx_ui("-s", "local_cwd", cwd=workdir) as ui, browser_page() as page:
        page.goto(ui.page_url("/"))
        loaded(page)
        until(page, "document.querySelector('#apps [role=progressbar]') !== null")
        body = page.evaluate("fetch('/api/apps', {headers: authHeaders()}).then((r) => r.text())")

        def refuse(name: str) -> Any:
            raise AssertionError(f"/api/apps is not JSON: {name}")

        listed = json.loads(body, parse_constant=refuse)
        (row,) = [r for r in listed["apps"] if r["app_id"] == app_id]
        assert row["progress"]["metrics"]["loss"] == "NaN", row
        assert "\\x1b[31mred=1" in row["progress"]["metrics_line"]

        page.goto(f"{ui.base}/app/{app_id}")
        loaded(page)
        until(page, "document.querySelectorAll('#charts .chart').length >= 2")
        charts = page.eval_on_selector_all(
            "#charts .chart", "els => els.map(e => e.dataset.metric)"
        )
        assert "constructor" in charts and "__proto__" in charts, charts
        text = page.inner_text("body")
        assert "\x1b" not in text and "\\x1b[31mred" in text


def test_another_user_sees_no_token_in_ps(workdir: Path, tmp_path: Path) -> None:
    """``webbrowser.open(url)`` put the tokened URL on the browser's command line, which
    ``ps`` shows every user: the browser (here a script that stays up) is given a private
    file instead. ``ps`` is run as the machine's other account (tools/sshd-up.sh)."""
    import os
    import subprocess
    import time

    from torchx_testsupport import backend_missing, laptop
    from torchx_testsupport.ui import TORCHX

    missing = laptop.problem()
    if missing:
        backend_missing("TORCHX_REQUIRE_SSH", missing)
    browser = tmp_path / "browser.sh"
    browser.write_text("#!/bin/sh\nsleep 60\n")  # its arguments stay in ps a minute
    browser.chmod(0o755)
    env = {**os.environ, "BROWSER": str(browser), "TORCHX_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [TORCHX, "ui", "--port", "0", "-s", "local_cwd"], cwd=workdir, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        proc.stdout.readline()
        token = proc.stdout.readline().strip().rsplit("token=", 1)[1]
        deadline = time.monotonic() + 60
        while True:
            seen = subprocess.run(
                ["runuser", "-u", laptop.LOGIN_USER, "--", "ps", "-eww", "-o", "args"],
                capture_output=True, text=True, timeout=30, check=True,
            ).stdout  # fmt: skip
            if "open-" in seen or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert "browser.sh file://" in seen and "/ui/open-" in seen, seen  # the browser is up
        assert token not in seen
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        subprocess.run(["pkill", "-f", f"{browser} file://"], check=False)


def _peak_rss_mb(pid: int) -> float:
    """The process's peak resident memory so far (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no VmHWM for {pid}")


def _tasks(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/task").iterdir()))


BIG_LINE_MB = 64


def test_a_giant_log_line_and_closed_pages_leave_the_server_bounded(workdir: Path) -> None:
    """The audit's 300 MB line added 330 MB to the server, and 243 follower threads stayed
    after their pages closed. Here a 64 MiB line (no line end until its last byte): the
    page gets it cut, the server's peak memory grows by far less than the line; and the
    followers of 20 pages opened and closed on an idle log all end."""
    import urllib.request

    from torchx_testsupport import wait_until

    big = (
        f'python3 -c \'import sys; sys.stdout.write("x" * {BIG_LINE_MB << 20} + "\\n")\';'
        " echo after; sleep 600"
    )
    with get_runner() as runner:
        handle = runner.run(shell_app("big", big), "local_cwd")
        try:
            wait_until(
                lambda: any("after" in line for line in runner.log_lines(handle, "big", 0)),
                "the big line written", 120, 0.2,
            )  # fmt: skip
            app_id = handle.rsplit("/", 1)[-1]
            with torchx_ui("-s", "local_cwd", cwd=workdir) as ui:
                auth = {"Authorization": f"token {ui.token}"}
                url = f"{ui.base}/api/log/{app_id}?role=big&replica=0"

                def lines_until_after() -> list[str]:
                    got: list[str] = []
                    request = urllib.request.Request(url, headers=auth)
                    with urllib.request.urlopen(request, timeout=120) as stream:
                        for raw in stream:
                            if raw.startswith(b"data: ["):
                                got += json.loads(raw[len(b"data: ") :])
                                if "after" in got:
                                    return got
                    return got

                lines_until_after()  # warm: the server's own peak before the big one counts
                base_mb, base_tasks = _peak_rss_mb(ui.proc.pid), _tasks(ui.proc.pid)
                got = lines_until_after()
                grown = _peak_rss_mb(ui.proc.pid) - base_mb
                assert grown < BIG_LINE_MB / 4, f"the server grew {grown:.0f} MiB"
                assert all(len(line) < 20000 for line in got)
                assert any("more characters; torchx log shows them" in line for line in got)
                for _ in range(20):  # pages opened and closed on the idle log
                    request = urllib.request.Request(url, headers=auth)
                    with urllib.request.urlopen(request, timeout=60) as stream:
                        stream.readline()
                wait_until(
                    lambda: _tasks(ui.proc.pid) <= base_tasks + 2,
                    "the followers of closed pages to end", 60, 0.2,
                )  # fmt: skip
        finally:
            runner.cancel(handle)

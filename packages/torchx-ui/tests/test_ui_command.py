"""``torchx ui`` as a user starts it: the URL on a line of its own with a fresh token, the
token required by every request, a warning for an address others can reach, one line for
each mistake, and the JSON its pages read, against real apps on local_cwd."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from torchx_testsupport.ui import TORCHX, shell_app, torchx_ui

from torchx.runner import get_runner
from torchx.specs import AppState

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TORCHX_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _get(url: str, headers: dict[str, str] | None = None) -> tuple[int, str, Any]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, answer.read().decode(), answer.headers
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), e.headers


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TORCHX, *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )


def test_the_url_has_a_fresh_token_and_every_request_needs_it(home: Path) -> None:
    with torchx_ui(cwd=home) as first, torchx_ui(cwd=home) as second:
        for ui in (first, second):
            assert ui.first_line.startswith("torchx ui: the apps of local_cwd;"), ui.first_line
            assert re.fullmatch(r"http://127\.0\.0\.1:\d+/\?token=[0-9a-f]{48}", ui.url), ui.url
        assert first.token != second.token
        ui = first
        assert _get(ui.base + "/api/apps")[0] == 401
        assert _get(ui.base + "/api/apps?token=" + ui.token)[0] == 401  # the header only
        assert _get(ui.base + "/api/apps", {"Authorization": f"token {second.token}"})[0] == 403
        assert _get(ui.base + "/api/apps", {"Authorization": "token nope"})[0] == 403
        code, body, headers = _get(ui.url)  # the page itself holds no data
        assert code == 200 and "<title>torchx ui: apps</title>" in body
        assert "set-cookie" not in headers  # a cookie would go to every port of the host
        assert headers["x-frame-options"] == "DENY"
        assert headers["referrer-policy"] == "no-referrer"
        assert _get(ui.base + "/api/apps", {"Authorization": f"token {ui.token}"})[0] == 200


def test_a_request_from_another_origin_or_host_changes_nothing(
    apps: dict[str, str], home: Path
) -> None:
    """The audit's CSRF: a page of another local port posted a cancel. Now a request that
    changes something must come from the dashboard's own origin, with the token's header;
    a rebound host name is refused; only a scheduler the dashboard shows is used."""
    running_id = apps["running"].rsplit("/", 1)[1]
    with torchx_ui("-s", "local_cwd", cwd=home) as ui:
        auth = {"Authorization": f"token {ui.token}"}
        port = ui.base.rsplit(":", 1)[1]

        def post(path: str, headers: dict[str, str]) -> int:
            request = urllib.request.Request(ui.base + path, method="POST", headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=30) as answer:
                    return int(answer.status)
            except urllib.error.HTTPError as e:
                return e.code

        cancel = f"/api/cancel/{running_id}"
        assert post(cancel, {"Origin": "http://127.0.0.1:1"}) == 401  # no token: nothing
        assert post(cancel, {**auth, "Origin": "http://127.0.0.1:1"}) == 403
        assert post(cancel, {**auth, "Sec-Fetch-Site": "same-site"}) == 403
        assert post(cancel, {**auth, "Host": f"rebound.example:{port}"}) == 421
        assert _get(ui.base + "/api/apps", {**auth, "Host": f"rebound.example:{port}"})[0] == 421
        assert post(cancel + "?scheduler=kubernetes", auth) == 400  # not one it shows
        with get_runner() as runner:
            status = runner.status(apps["running"])
            assert status is not None and status.state == AppState.RUNNING
        origin = {"Origin": ui.base, "Sec-Fetch-Site": "same-origin"}
        assert post(cancel, {**auth, **origin}) == 200  # the dashboard's own page


def test_an_address_others_can_reach_is_warned_about(home: Path) -> None:
    with torchx_ui("--host", "0.0.0.0", cwd=home) as ui:
        assert ui.url.startswith(f"http://{socket.gethostname()}:"), ui.url
    assert ui.proc.stderr is not None
    warned = ui.proc.stderr.read()
    assert (
        "torchx ui: warning: --host 0.0.0.0 is not a loopback address: anyone who can reach it"
        " and has the token can see your apps and cancel them"
    ) in warned
    # Ctrl-C (SIGINT) is how it is stopped: a clean exit
    assert ui.proc.returncode == 0
    assert warned.strip().splitlines()[1:] == ["torchx ui: stopped"], warned


def test_mistakes_are_one_line_each(home: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        cases = {
            ("ui", "--port", str(port), "--no-browser"): f"port {port} on 127.0.0.1 is in use",
            (
                "ui",
                "-s",
                "local_cwd,nope",
                "--no-browser",
            ): "-s local_cwd,nope: no scheduler `nope`",
            ("ui", "-s", "local_cwdd", "--no-browser"): "`local_cwdd` is installed (did you mean"
            " local_cwd?)",
            ("ui", "--port", "70000", "--no-browser"): "--port must be 0-65535, got 70000",
            ("ui", "--host", "no-such-host.invalid", "--no-browser"): "--host no-such-host.invalid",
            (
                "ui",
                "-s",
                "local_cwd",
                "-cfg",
                "log_dri=/tmp",
                "--no-browser",
            ): "unknown run option 'log_dri' for scheduler 'local_cwd' (did you mean 'log_dir'?)",
        }
        for args, said in cases.items():
            done = _run(*args, cwd=home)
            assert done.returncode != 0, (args, done.stdout)
            assert done.stdout == "", (args, done.stdout)
            lines = done.stderr.strip().splitlines()
            assert len(lines) == 1 and said in lines[0], (args, done.stderr)
            assert "Traceback" not in done.stderr


def test_help_says_what_ui_is_for(home: Path) -> None:
    purpose = "open a local web dashboard of your apps on every scheduler"
    overview = _run("--help", cwd=home).stdout
    assert f"  ui            {purpose} (from torchx-ui " in overview, overview
    assert f"\n{purpose}\n" in _run("ui", "--help", cwd=home).stdout


def test_help_loads_no_web_library(home: Path) -> None:
    code = (
        "import sys\n"
        "from torchx.cli.main import main\n"
        "try:\n    main(['ui', '--help'])\n"
        "except SystemExit:\n    pass\n"
        "print([m for m in ('starlette', 'uvicorn', 'anyio') if m in sys.modules])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "--no-browser" in done.stdout
    assert done.stdout.strip().endswith("[]"), done.stdout
    listed = _run("--help", cwd=home)
    assert re.search(r"^\s+ui\s", listed.stdout, re.MULTILINE), listed.stdout


@pytest.fixture
def apps(home: Path) -> Iterator[dict[str, str]]:
    with get_runner() as runner:
        handles = {
            "failed": runner.run(shell_app("crash", "echo 'boom' >&2; exit 3"), "local_cwd"),
            "running": runner.run(
                shell_app(
                    "train",
                    'echo "TORCHX_PROGRESS {\\"step\\": 1, \\"total\\": 2,'
                    ' \\"metrics\\": {\\"loss\\": 0.5}}" >&2; echo ready; sleep 600',
                ),
                "local_cwd",
            ),
        }
        runner.wait(handles["failed"], wait_interval=0.2)
        try:
            yield handles
        finally:
            runner.cancel(handles["running"])


def _events(
    url: str, headers: dict[str, str], until: str, containing: str | None = None
) -> list[tuple[str, Any]]:
    """The server-sent events of ``url`` up to the first named ``until`` (and, with
    ``containing``, holding that line: a followed log arrives in as many batches as the
    app's writes happened to fall into)."""
    found: list[tuple[str, Any]] = []
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=60) as s:
        assert s.headers["content-type"].startswith("text/event-stream")
        event = ""
        for raw in s:
            line = raw.decode().rstrip("\n")
            if line.startswith("event: "):
                event = line[len("event: ") :]
            elif line.startswith("data: "):
                found.append((event, json.loads(line[len("data: ") :])))
                if event == until and (containing is None or containing in found[-1][1]):
                    return found
    return found


def test_the_json_behind_the_pages(apps: dict[str, str], home: Path) -> None:
    failed_id = apps["failed"].rsplit("/", 1)[1]
    running_id = apps["running"].rsplit("/", 1)[1]
    with torchx_ui("-s", "local_cwd", cwd=home) as ui:
        auth = {"Authorization": f"token {ui.token}"}
        snapshot: dict[str, Any] = {}
        for _ in range(100):  # the root cause comes from a status read the listing starts
            snapshot = json.loads(_get(ui.base + "/api/apps", auth)[1])
            rows = {row["app_id"]: row for row in snapshot["apps"]}
            if rows.get(failed_id, {}).get("failure"):
                break
            time.sleep(0.2)
        assert snapshot["schedulers"][0]["name"] == "local_cwd"
        assert snapshot["schedulers"][0]["state"] == "ok"
        rows = {row["app_id"]: row for row in snapshot["apps"]}
        assert rows[failed_id]["state"] == "FAILED"
        assert rows[failed_id]["failure"] == "crash[0]: exited with code 3"
        assert rows[failed_id]["submitted"] <= snapshot["now"]
        assert rows[running_id]["state"] == "RUNNING"
        assert rows[running_id]["handle"] == apps["running"]

        code, body, _ = _get(f"{ui.base}/api/app/{failed_id}", auth)
        app = json.loads(body)
        assert code == 200 and app["terminal"] is True and app["scheduler"] == "local_cwd"
        assert app["status"]["failure"]["log_tail"] == ["boom"]
        assert app["status"]["roles"][0]["replicas"][0]["state"] == "FAILED"
        code, body, _ = _get(f"{ui.base}/api/app/no-such-app", auth)
        assert code == 404 and "no app 'no-such-app' on local_cwd" in body

        events = _events(f"{ui.base}/api/log/{failed_id}?role=crash&replica=0", auth, "end")
        assert events == [("lines", ["boom"]), ("end", {})]
        follow = f"{ui.base}/api/log/{running_id}?role=train&replica=0"
        followed = _events(follow, auth, "lines", containing="ready")  # the stream stays open
        assert {event for event, _ in followed} == {"lines"}
        assert "ready" in [line for _, lines in followed for line in lines]

        progress = json.loads(_get(f"{ui.base}/api/progress/{running_id}", auth)[1])
        assert [(r["step"], r["metrics"]) for r in progress["reports"]] == [(1, {"loss": 0.5})]

        assert _get(f"{ui.base}/api/cancel/{running_id}", auth)[0] == 405  # POST only
        request = urllib.request.Request(
            f"{ui.base}/api/cancel/{running_id}", method="POST", headers=auth
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert json.loads(answer.read()) == {"cancelled": apps["running"]}
        with get_runner() as runner:
            status = runner.wait(apps["running"], wait_interval=0.2)
            assert status is not None and status.state == AppState.CANCELLED


def test_it_opens_the_browser_unless_told_not_to(home: Path) -> None:
    """The browser ``webbrowser`` finds ($BROWSER here: a script noting what it opened)
    is given a private file that leads to the dashboard, not the token: a browser's
    command line is in ``ps`` for every user."""
    opened = home / "opened.txt"
    browser = home / "browser.sh"
    browser.write_text(f'#!/bin/sh\necho "$1" >> {opened}\n')
    browser.chmod(0o700)
    env = {**os.environ, "BROWSER": str(browser)}
    proc = subprocess.Popen(
        [TORCHX, "ui", "--port", "0"], cwd=home, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        proc.stdout.readline()
        url = proc.stdout.readline().strip()
        token = url.rsplit("token=", 1)[1]
        deadline = time.monotonic() + 60
        while not opened.exists() or not opened.read_text().strip():
            assert time.monotonic() < deadline, "no browser was opened"
            time.sleep(0.1)
        (given,) = opened.read_text().splitlines()
        assert token not in given and given.startswith("file://"), given
        page = Path(given[len("file://") :])
        assert page.parent == home / "home" / "ui"
        assert (page.stat().st_mode & 0o777, page.parent.stat().st_mode & 0o777) == (0o600, 0o700)
        assert url.replace("/?token=", "/#token=") in page.read_text()
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    assert not page.exists()  # removed when the dashboard stops
    with torchx_ui(cwd=home, env=env):  # --no-browser
        pass
    assert opened.read_text().splitlines() == [given]  # opened once, by the first only

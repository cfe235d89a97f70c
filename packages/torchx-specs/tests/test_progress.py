"""``torchx.progress``: what a job reports (real processes, their real stderr) and what
``status`` makes of the end of a log holding such reports."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import time
from typing import Any

import pytest

from torchx.specs.progress import from_log_tail, progress_line


def _run(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, **env},
    )


def _reports(stderr: str) -> list[dict[str, Any]]:
    return [
        json.loads(line.split(" ", 1)[1])
        for line in stderr.splitlines()
        if line.startswith("TORCHX_PROGRESS ")
    ]


def test_import_loads_nothing_beyond_the_interpreters_start() -> None:
    probe = "import sys; before = set(sys.modules); import torchx.progress; "
    probe += "print(sorted(set(sys.modules) - before))"
    added = json.loads(_run(probe).stdout.replace("'", '"'))
    assert [m for m in added if not m.startswith(("torchx", "__future__"))] == [], added
    assert "torch" not in added


def test_the_throttle_writes_a_handful_and_the_exit_writes_the_last() -> None:
    """10,000 calls in a tight loop with the default 5 s interval: the first is written
    at once, the last at exit, nothing in between (the loop takes far less than 5 s)."""
    code = (
        "import torchx.progress as p\n"
        "for i in range(1, 10001):\n"
        "    p.report(i, total=10000, loss=1.0 / i)\n"
    )
    run = _run(code)
    assert run.returncode == 0, run.stderr
    reports = _reports(run.stderr)
    assert 2 <= len(reports) <= 5, reports
    assert (reports[0]["step"], reports[-1]["step"]) == (1, 10000)
    assert reports[-1]["total"] == 10000 and reports[-1]["metrics"] == {"loss": 0.0001}


def test_interval_zero_writes_every_call_with_a_rate() -> None:
    code = "import torchx.progress as p\nfor i in range(1, 4):\n    p.report(i, total=4)\n"
    reports = _reports(_run(code, TORCHX_PROGRESS_INTERVAL="0").stderr)
    assert [r["step"] for r in reports] == [1, 2, 3]
    assert "rate" not in reports[0] and reports[-1]["rate"] > 0


def test_only_rank_zero_reports_unless_asked() -> None:
    code = "import torchx.progress as p\np.report(1, total=2)\n"
    assert _reports(_run(code, RANK="1").stderr) == []
    assert len(_reports(_run(code, RANK="1", TORCHX_PROGRESS_ALL_RANKS="1").stderr)) == 1
    assert len(_reports(_run(code, RANK="0").stderr)) == 1


def test_nan_is_kept_and_each_bad_value_is_one_warning_and_reports_go_on() -> None:
    """A diverged loss must show (NaN and infinities are kept, as W&B and TensorBoard
    keep them); a bad value skips its call with one warning naming it, never the run's
    later reports."""
    code = (
        "import torchx.progress as p\n"
        "p.report(1, total=9, loss=float('nan'), lr=0.1)\n"
        "p.report(None)\n"
        "p.report(2, total=9, loss='high')\n"
        "p.report(3, total=0)\n"
        "p.report(3, total='10')\n"
        "p.report(12, total=9)\n"
        "p.report(-1)\n"
        "p.report(None)\n"  # the same mistake again: no second warning
        "p.report(13, total=9)\n"
        "p.report(4, total=9, loss=float('inf'))\n"
        "p.report(5, total=9, loss=0.5)\n"
    )
    run = _run(code, TORCHX_PROGRESS_INTERVAL="0")
    reports = _reports(run.stderr)
    assert [(r["step"], r["metrics"]) for r in reports] == [
        (1, {"loss": pytest.approx(float("nan"), nan_ok=True), "lr": 0.1}),
        (4, {"loss": float("inf")}),
        (5, {"loss": 0.5}),
    ]
    warnings = [line for line in run.stderr.splitlines() if "this report is skipped" in line]
    assert [w.split("torchx.progress.report: ", 1)[1] for w in warnings] == [
        "step=None is not an integer >= 0; this report is skipped",
        "metric loss='high' is not a number; this report is skipped",
        "total=0 is not an integer >= 1 (or None: unknown); this report is skipped",
        "total='10' is not an integer >= 1 (or None: unknown); this report is skipped",
        "step=12 is past total=9; this report is skipped",
        "step=-1 is not an integer >= 0; this report is skipped",
    ]  # once per mistake: the second step=None and step=13 past the total repeat one


def test_a_bad_interval_is_one_warning_and_the_default() -> None:
    run = _run("import torchx.progress as p\np.report(1)\n", TORCHX_PROGRESS_INTERVAL="abc")
    assert "TORCHX_PROGRESS_INTERVAL='abc' is not a number of seconds >= 0; using 5" in run.stderr
    assert [r["step"] for r in _reports(run.stderr)] == [1]


def test_a_failed_write_is_one_warning_then_silence() -> None:
    code = (
        "import sys, torchx.progress as p\n"
        "sys.stderr.close()\n"
        "for i in range(3):\n"
        "    p.report(i)\n"
        "print('loop went on')\n"
    )
    run = _run(code, TORCHX_PROGRESS_INTERVAL="0")
    assert run.returncode == 0 and run.stdout == "loop went on\n", run


def test_reports_reach_kubeflow_trainers_endpoint_in_its_format() -> None:
    received: list[dict[str, Any]] = []

    class Endpoint(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append({"auth": self.headers.get("Authorization"), **json.loads(body)})
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Endpoint)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/apis/trainer.kubeflow.org/v1alpha1/x"
        code = "import torchx.progress as p\np.report(3, total=4, loss=0.25)\n"
        run = _run(code, KUBEFLOW_TRAINER_SERVER_URL=url)
        assert run.returncode == 0, run.stderr
    finally:
        server.shutdown()
    (sent,) = received
    status = sent["trainerStatus"]
    assert status["progressPercentage"] == 75
    assert status["metrics"] == [{"name": "loss", "value": "0.25"}]
    assert status["lastUpdatedTime"].endswith("Z")


TAIL = "\n".join(
    [
        "epoch 1",
        'TORCHX_PROGRESS {"step": 1, "total": 4, "time": 1000.0, "metrics": {"loss": 0.9}}',
        "[default0]:noise",
        'TORCHX_PROGRESS {"step": broken',
        "[default0]:TORCHX_PROGRESS "
        '{"step": 3, "total": 4, "time": 1020.0, "metrics": {"loss": 0.33}}',
        "epoch 3 done",
    ]
)


def test_the_last_report_of_a_tail_with_a_rate_measured_between_reports() -> None:
    progress = from_log_tail(TAIL, "trainer", 0, running=True, now=1024.0)
    assert progress is not None
    assert (progress.step, progress.total, progress.fraction) == (3, 4, 0.75)
    assert progress.metrics == {"loss": 0.33} and progress.updated == 1020.0
    # 2 steps in 20 s: 1 step left is 10 s after the report, 4 s of which have passed
    assert progress.eta_s == 6.0
    assert progress.to_json()["role"] == "trainer"
    assert progress_line(progress, 1024.0) == (
        "Progress: 75% (3/4), ETA 6s, loss=0.33, updated 4s ago"
    )


def test_a_tail_without_reports_has_no_progress_and_an_ended_app_no_eta() -> None:
    assert from_log_tail("just logs\n", "r", 0, running=True, now=0.0) is None
    ended = from_log_tail(TAIL, "r", 0, running=False, now=time.time())
    assert ended is not None and ended.eta_s is None


@pytest.mark.parametrize(
    ("line", "text"),
    [
        ('TORCHX_PROGRESS {"step": 7}', "Progress: step 7"),
        ('TORCHX_PROGRESS {"step": 30, "total": 40, "rate": 0.0125, "time": 0}', None),
    ],
)
def test_reports_from_a_job_without_torchx(line: str, text: str | None) -> None:
    """The protocol alone (what ``echo`` in a shell writes): step only, or the reporter's
    own rate: 10 steps left at 0.0125/s is 800 s, ``ETA 13m``."""
    progress = from_log_tail(line, "r", 0, running=True, now=0.0)
    assert progress is not None
    if text is not None:
        assert progress_line(progress, 0.0) == text
    else:
        assert progress.eta_s == 800.0
        assert progress_line(progress, 0.0) == "Progress: 75% (30/40), ETA 13m, updated 0s ago"


@pytest.mark.parametrize(
    ("module", "hint"),
    [("lightning", "pip install lightning"), ("transformers", "pip install transformers")],
)
def test_a_callback_without_its_library_is_one_import_error_line(module: str, hint: str) -> None:
    """The callbacks' own libraries hidden (a meta-path finder refuses them), as on a
    machine that lacks them."""
    code = (
        "import sys\n"
        "class Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('lightning', 'pytorch_lightning', 'transformers'):\n"
        "            raise ImportError(f'No module named {name!r}')\n"
        "sys.meta_path.insert(0, Hide())\n"
        "try:\n"
        f"    import torchx.progress.{module}\n"
        "except ImportError as e:\n"
        "    print(type(e).__name__, e)\n"
    )
    run = _run(code)
    assert run.stdout.splitlines() == [
        f"ImportError torchx.progress.{module} needs "
        + ("PyTorch Lightning" if module == "lightning" else "Hugging Face Transformers")
        + f", not installed here: {hint}"
    ]

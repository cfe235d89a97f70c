"""``torchx ui``'s apps page with N apps (default 2,000) in headless Chromium, side by side
with its floor: the same table (same rows, same stylesheet) as a static HTML file, which a
browser only has to parse and lay out. Both are timed the same way, from the start of the
navigation to a table of N rows (``performance.now()``), round-robin, medians.

The apps are real local_cwd apps: one run, its state directory copied N-1 times.

Targets (issue 61): under 2 s; and ours <= 4x the static floor (the price of fetching the
JSON and building the rows in the page). A report, not a test: always exits 0.

    python benchmarks/bench_ui.py [--apps 2000] [--runs 5]
"""

from __future__ import annotations

import argparse
import html
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _harness import verdict
from torchx_testsupport.ui import browser_page, torchx_ui

TORCHX = str(Path(sys.executable).parent / "torchx")
BUDGET_MS = 2000.0
TARGET = 4.0


def make_apps(home: Path, count: int, work: Path) -> None:
    env = {**os.environ, "TORCHX_HOME": str(home)}
    subprocess.run(
        [TORCHX, "run", "-s", "local_cwd", "utils.sh", "echo", "ok"],
        cwd=work, env=env, check=True, capture_output=True,
    )  # fmt: skip
    apps = home / "local_cwd"
    (ran,) = os.listdir(apps)
    for i in range(1, count):
        shutil.copytree(apps / ran, apps / f"sh-copy{i:05d}", symlinks=True)


def static_table(rows: list[dict[str, object]], css: str) -> str:
    """The apps table as the page draws it, written out as HTML."""
    template = (
        "<tr><td><a href='#'>{name}</a></td><td class='handle'>{handle}</td><td>{scheduler}</td>"
        "<td><span class='state state-{state}'>{state}</span></td><td>1m</td><td></td></tr>"
    )
    keys = ("name", "handle", "scheduler", "state")
    cells = "".join(template.format(**{k: html.escape(str(r[k])) for k in keys}) for r in rows)
    return (
        f"<!doctype html><html><head><style>{css}</style></head><body><main>"
        f"<table id='apps'><tbody>{cells}</tbody></table></main></body></html>"
    )


def time_to_rows(page: object, url: str, count: int) -> float:
    page.goto(url)  # type: ignore[attr-defined]
    page.wait_for_function(  # type: ignore[attr-defined]
        f"document.querySelectorAll('#apps tbody tr').length === {count}"
        " && (window.drawnAt = performance.now())",
        timeout=120_000,
    )
    return float(page.evaluate("window.drawnAt"))  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    import torchx.ui

    css = (Path(torchx.ui.__file__).parent / "static" / "ui.css").read_text()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        home, work = tmp / "home", tmp / "work"
        work.mkdir()
        make_apps(home, args.apps, work)
        env = {**os.environ, "TORCHX_HOME": str(home)}
        with torchx_ui("-s", "local_cwd", cwd=work, env=env) as ui, browser_page() as page:
            import urllib.request

            request = urllib.request.Request(
                ui.base + "/api/apps", headers={"Authorization": f"token {ui.token}"}
            )
            with urllib.request.urlopen(request, timeout=60) as answer:
                rows = json.loads(answer.read())["apps"]
            assert len(rows) == args.apps, len(rows)
            floor_page = tmp / "floor.html"
            floor_page.write_text(static_table(rows, css))
            ours, floor = [], []
            time_to_rows(page, ui.page_url("/"), args.apps)  # warm: cookie, caches
            for _ in range(args.runs):
                ours.append(time_to_rows(page, ui.base + "/", args.apps))
                floor.append(time_to_rows(page, floor_page.as_uri(), args.apps))
    ours_ms, floor_ms = statistics.median(ours), statistics.median(floor)
    print(f"apps page, {args.apps} apps, navigation to the full table (median of {args.runs}):")
    budget = verdict(ours_ms < BUDGET_MS)
    print(f"  torchx ui    {ours_ms:7.0f} ms   target < {BUDGET_MS:.0f} ms: {budget}")
    print(f"  static floor {floor_ms:7.0f} ms")
    ratio = ours_ms / floor_ms
    print(f"  ratio        {ratio:7.2f}x   target <= {TARGET:g}x: {verdict(ratio <= TARGET)}")


if __name__ == "__main__":
    main()

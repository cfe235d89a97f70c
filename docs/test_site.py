"""The built site as a reader meets it: every page built, reference tables that agree with
the code, no broken internal link, and pages that render in a real browser."""

from __future__ import annotations

import html.parser
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import unquote, urldefrag

import pytest

DOCS = Path(__file__).resolve().parent


class _Page(html.parser.HTMLParser):
    """Links, element ids and table rows of one HTML page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.ids: set[str] = set()
        self.tables: list[list[list[str]]] = []
        self.text: list[str] = []
        self._cell: list[str] | None = None
        self._row: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(str(values["id"]))
        if tag == "a" and values.get("href"):
            self.links.append(str(values["href"]))
        elif tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1].append(self._row)
            self._row = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text())
    return page


def _installed_schedulers() -> list[str]:
    from torchx.schedulers import get_scheduler_factories

    return sorted(get_scheduler_factories())


@pytest.mark.parametrize("scheduler", _installed_schedulers())
def test_each_scheduler_page_lists_its_run_options(built_site: Path, scheduler: str) -> None:
    """A scheduler's page shows exactly its run options, with their types and defaults."""
    from torchx.runner import get_runner
    from torchx.specs import get_type_name

    page_file = built_site / "schedulers" / f"{scheduler}.html"
    assert page_file.exists(), f"no page docs/schedulers/{scheduler}.md for `{scheduler}`"
    tables = [t for t in _parse(page_file).tables if t and t[0][:2] == ["option", "type"]]
    assert len(tables) == 1, f"{page_file.name}: expected one run-options table"
    shown = {row[0]: row[1:3] for row in tables[0][1:]}
    with get_runner() as runner:
        opts = runner.scheduler_run_opts(scheduler)
    expected = {}
    for name, opt in opts:
        default = "(required)" if opt.is_required else ("" if opt.default is None else opt.default)
        expected[name] = [get_type_name(opt.opt_type), " ".join(str(default).split())]
    assert shown == expected


def test_every_component_is_documented(built_site: Path) -> None:
    from torchx.specs.finder import get_components

    ids = _parse(built_site / "components.html").ids
    for name in get_components():
        assert name.replace(".", "-").replace("_", "-") in ids, f"{name} has no section"


def test_every_subcommand_is_in_the_cli_reference(built_site: Path) -> None:
    from torchx.cli.main import get_sub_cmds

    ids = _parse(built_site / "cli.html").ids
    for name in get_sub_cmds():
        assert f"torchx-{name}" in ids, f"`torchx {name}` missing from the CLI reference"


def test_no_broken_internal_links(built_site: Path) -> None:
    pages = {p: _parse(p) for p in built_site.rglob("*.html")}
    broken = []
    for path, page in pages.items():
        for href in page.links:
            if href.startswith(("http://", "https://", "mailto:")):
                continue
            target, fragment = urldefrag(href)
            file = (path.parent / unquote(target)).resolve() if target else path
            if file.is_dir():
                file = file / "index.html"
            if not file.exists():
                broken.append(f"{path.relative_to(built_site)}: {href}")
            elif fragment and file.suffix == ".html":
                target_page = pages.get(file) or _parse(file)
                if unquote(fragment) not in target_page.ids:
                    broken.append(f"{path.relative_to(built_site)}: {href} (no such anchor)")
    assert not broken, "broken links:\n" + "\n".join(broken)


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        message = "Chromium is not installed (Debian package `chromium`)"
        if os.environ.get("TORCHX_REQUIRE_CHROMIUM") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return found


def _render(chromium: str, page: Path, *extra: str) -> str:
    """The DOM of ``page`` after headless Chromium loaded and ran it."""
    with tempfile.TemporaryDirectory() as profile:
        proc = subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                f"--user-data-dir={profile}",
                *extra,
                "--dump-dom",
                page.as_uri(),
            ],
            check=False,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@pytest.mark.parametrize(
    ("page", "must_show", "tables"),
    [
        ("index.html", ["Quickstart", "Schedulers"], 0),
        ("quickstart.html", ["torchx run -s local_cwd utils.echo", "get_runner"], 0),
        ("schedulers/slurm.html", ["Run options", "partition", "Troubleshooting"], 3),
    ],
)
def test_pages_render_in_a_browser(
    built_site: Path, page: str, must_show: list[str], tables: int
) -> None:
    """Navigation, code blocks and tables survive a real browser's rendering."""
    dom = _render(_chromium(), built_site / page)
    parsed = _Page()
    parsed.feed(dom)
    assert 'class="sidebar-tree"' in dom, "no navigation sidebar"
    assert "<pre>" in dom or "<pre " in dom, "no code block"
    assert len(parsed.tables) >= tables, f"{page}: {len(parsed.tables)} tables, {tables} expected"
    shown = "".join(parsed.text)
    for text in must_show:
        assert text in shown, f"{page} does not show {text!r}"
    nav_links = [link for link in parsed.links if link.endswith(".html")]
    assert len(nav_links) >= 10, "the navigation lists too few pages"


_OVERFLOW_PROBE = """<!doctype html><html><body><iframe id="f" src="%s"
 style="width:1280px;height:900px;border:0"></iframe><script>
document.getElementById("f").onload = function () {
  var doc = this.contentDocument, win = this.contentWindow, clipped = [];
  function scrolls(el) {
    for (; el && el !== doc.body; el = el.parentElement) {
      var o = win.getComputedStyle(el).overflowX;
      if (o === "auto" || o === "scroll") return true;
    }
    return false;
  }
  doc.querySelectorAll("article table, article pre, article code").forEach(function (el) {
    var box = el.getBoundingClientRect(), article = doc.querySelector("article");
    var edge = article.getBoundingClientRect().right;
    if (box.right > edge + 1 && !scrolls(el))
      clipped.push(el.tagName + ": " + el.textContent.slice(0, 60));
    // a table or code block that only scrolls still hides its right part at this width
    else if ((el.tagName === "TABLE" || el.tagName === "PRE")
             && el.scrollWidth > el.clientWidth + 1)
      clipped.push(el.tagName + " (scrolls): " + el.textContent.slice(0, 60));
  });
  var page = doc.documentElement.scrollWidth > win.innerWidth + 1;
  document.body.setAttribute("data-result", JSON.stringify({page: page, clipped: clipped}));
};
</script></body></html>"""


@pytest.mark.parametrize(
    "page",
    ["install.html", "quickstart.html", "components.html", "check.html", "cli.html",
     "examples/ddp_training.html", "api/specs.html", "ui.html"],
)  # fmt: skip
def test_wide_tables_and_code_scroll_at_1280_pixels(built_site: Path, page: str) -> None:
    """Nothing wider than the text column is cut off at 1280 pixels: tables and code
    blocks wrap to the column (a box that must be scrolled sideways hides its right part,
    as the components page's argument tables and the `torchx check` sample did), and the
    page itself never needs a horizontal scroll bar."""
    import json

    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.html"
        probe.write_text(_OVERFLOW_PROBE % (built_site / page).as_uri())
        dom = _render(
            _chromium(), probe, "--allow-file-access-from-files", "--window-size=1400,1000",
            "--virtual-time-budget=5000",
        )  # fmt: skip
    found = re.search(r'data-result="([^"]*)"', dom)
    assert found, dom[-2000:]
    result = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert not result["page"], f"{page} scrolls sideways at 1280 px"
    assert result["clipped"] == [], f"{page}: cut off at 1280 px: {result['clipped'][:5]}"


def test_shell_blocks_have_a_copy_button_that_drops_prompts(built_site: Path) -> None:
    """The copy button (sphinx-copybutton) is on the pages; docs/test_paste.py runs it."""
    script = (built_site / "_static" / "copybutton.js").read_text()
    assert "formatCopyText(text, " in script
    assert "copybutton.js" in (built_site / "quickstart.html").read_text()

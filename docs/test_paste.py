"""Every shell block of the site pastes into bash as the reader's copy button copies it.

The copy is made by what ships: the built site's own copy-button code (sphinx-copybutton's
``copybutton.js``, with the settings conf.py gave it) runs in headless Chromium on every
page; only ClipboardJS's write to the clipboard is replaced, by a hook that keeps the text
the button's own callback returns. For a ``console`` block that must be exactly its
commands (the ``$`` lines and their ``>`` continuations, prompts dropped: what the docs
tests run), for a ``shell``/``bash`` block the block; and bash must parse it to the end
(no prompt read as a redirection, no here-document left open).

The README is not part of the site (GitHub's copy button copies a block whole): its blocks
must carry no prompt at all.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

DOCS = Path(__file__).resolve().parent


def _sibling(name: str) -> Any:
    """A module of this directory (the docs tests are not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"_torchx_docs_{name}", DOCS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


parse_transcript = _sibling("conftest").parse_transcript
_site = _sibling("test_site")
_chromium, _render = _site._chromium, _site._render
ROOT = DOCS.parent
SHELL_LANGUAGES = ("console", "shell", "bash", "sh")
_FENCE = re.compile(r"^(`{3,})\s*\{?(\w+)\}?[^\n]*\n(.*?)^\1\s*$", re.MULTILINE | re.DOTALL)

_COPY_PROBE = """<!doctype html><html><body><iframe id="f" style="width:1280px;height:900px">
</iframe><script>
var pages = %s, results = {}, frame = document.getElementById("f"), i = 0;
function next() {
  if (i >= pages.length) {
    document.body.setAttribute("data-result", JSON.stringify(results));
    return;
  }
  frame.onload = function () {
    var win = frame.contentWindow, doc = frame.contentDocument, page = pages[i];
    function copyAll() {
      var buttons = doc.querySelectorAll(".copybtn");
      var blocks = doc.querySelectorAll(
        "div.highlight-console pre, div.highlight-shell pre, div.highlight-bash pre");
      if (!win.ClipboardJS || buttons.length < blocks.length) { setTimeout(copyAll, 20); return; }
      var copied = [];
      // what ClipboardJS would write: the text its `text` option (the site's callback) gives
      win.ClipboardJS.prototype.onClick = function (e) {
        copied.push(this.text(e.delegateTarget || e.currentTarget));
      };
      buttons.forEach(function (b) { b.click(); });
      results[page] = copied;
      i += 1;
      next();
    }
    copyAll();
  };
  frame.src = pages[i];
}
next();
</script></body></html>"""


def _blocks(page: Path) -> list[tuple[int, str, str]]:
    """``(line, language, text)`` of each shell block of a Markdown page, in order."""
    text = page.read_text()
    return [
        (text.count("\n", 0, m.start()) + 1, m.group(2), m.group(3))
        for m in _FENCE.finditer(text)
        if m.group(2) in SHELL_LANGUAGES
    ]


def _site_pages() -> dict[str, list[tuple[int, str, str]]]:
    pages = {}
    for page in sorted(DOCS.rglob("*.md")):
        if "_build" in page.parts or "_generated" in page.parts:
            continue
        blocks = _blocks(page)
        if blocks:
            pages[page.relative_to(DOCS).with_suffix(".html").as_posix()] = blocks
    return pages


PAGES = _site_pages()


@pytest.fixture(scope="module")
def clipboard(built_site: Path) -> dict[str, list[str]]:
    """What the copy button of each shell block of each page copies, in order."""
    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe.html"
        uris = [(built_site / page).as_uri() for page in PAGES]
        probe.write_text(_COPY_PROBE % json.dumps(uris))
        dom = _render(
            _chromium(), probe, "--allow-file-access-from-files", "--virtual-time-budget=60000"
        )
    found = re.search(r'data-result="([^"]*)"', dom)
    assert found, f"the copy probe did not finish: {dom[-2000:]}"
    by_uri: dict[str, list[str]] = json.loads(html.unescape(found.group(1)))
    return {page: by_uri[(built_site / page).as_uri()] for page in PAGES}


def test_the_site_has_shell_blocks_to_paste() -> None:
    blocks = [b for page in PAGES.values() for b in page]
    assert len(blocks) > 40 and sum(lang == "console" for _, lang, _ in blocks) > 40


@pytest.mark.parametrize("page", sorted(PAGES))
def test_each_copy_button_copies_the_commands_and_bash_takes_them(
    clipboard: dict[str, list[str]], page: str
) -> None:
    blocks = PAGES[page]
    copied = clipboard[page]
    assert len(copied) == len(blocks), f"{page}: {len(copied)} copy buttons, {len(blocks)} blocks"
    for (line, language, text), pasted in zip(blocks, copied, strict=True):
        where = f"docs/{page.removesuffix('.html')}.md:{line}"
        if language == "console":
            wanted = "\n".join(command for command, _ in parse_transcript(text))
        else:
            prompted = [row for row in text.splitlines() if row.startswith(("$ ", "> "))]
            assert not prompted, f"{where}: a {language} block with prompts: {prompted[0]!r}"
            wanted = text.removesuffix("\n")
        # blank output lines come along (copyEmptyLines); they change nothing in bash
        lines = [row for row in pasted.splitlines() if row.strip()]
        assert lines == [row for row in wanted.splitlines() if row.strip()], (
            f"{where}: the copy button copies {pasted!r}"
        )
        check = subprocess.run(
            ["bash", "-n"], input=pasted + "\n", capture_output=True, text=True, timeout=30,
            check=False,
        )  # fmt: skip
        assert check.returncode == 0 and not check.stderr, (
            f"{where}: bash cannot take the pasted block: {check.stderr.strip()}\n{pasted}"
        )


@pytest.mark.parametrize(
    ("line", "language", "text"), _blocks(ROOT / "README.md"), ids=lambda v: str(v)[:20]
)
def test_a_readme_block_pastes_whole(line: int, language: str, text: str) -> None:
    prompted = [row for row in text.splitlines() if row.startswith(("$ ", "> "))]
    assert not prompted, f"README.md:{line}: GitHub copies the prompt {prompted[0]!r} along"
    check = subprocess.run(
        ["bash", "-n"], input=text, capture_output=True, text=True, timeout=30, check=False
    )
    assert check.returncode == 0 and not check.stderr, f"README.md:{line}: {check.stderr}"


def test_a_prompted_here_document_left_open_is_caught() -> None:
    """What the quickstart's block did when pasted with its prompts by hand."""
    pasted = "$ cat > train.py <<'EOF'\n> print(1)\n> EOF\n"
    check = subprocess.run(
        ["bash", "-n"], input=pasted, capture_output=True, text=True, check=False
    )
    assert check.returncode != 0 or check.stderr
